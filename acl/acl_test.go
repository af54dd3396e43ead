package acl

import (
	"path"
	"testing"
)

func testUsers() *Users {
	cat := NewCatalog([]CommandInfo{
		{"get", []string{"read", "string", "fast"}},
		{"set", []string{"write", "string", "slow"}},
		{"config", []string{"slow"}},
		{"config|get", []string{"admin", "slow", "dangerous"}},
		{"config|set", []string{"admin", "slow", "dangerous"}},
	}, func(p string, s []byte) bool { ok, _ := path.Match(p, string(s)); return ok })
	return NewUsers(cat)
}

func TestDefaultUser(t *testing.T) {
	us := testUsers()
	if got, want := us.Get("default").Describe(), "user default on nopass ~* &* +@all"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
}

func TestSetUserAndCheck(t *testing.T) {
	us := testUsers()
	u, _, err := us.SetUser("alice", []string{"on", ">pw", "+get", "-@all", "+@string", "-set", "%R~r*", "~w*", "&ch"})
	if err != nil {
		t.Fatal(err)
	}
	st := u.State()
	if !st.CheckPassword([]byte("pw")) || st.CheckPassword([]byte("x")) {
		t.Fatal("password check")
	}
	want := "user alice on #" + HashPassword([]byte("pw")) + " %R~r* ~w* resetchannels &ch -@all +@read"
	if got := u.Describe(); got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	get, set := us.Catalog().ID("get"), us.Catalog().ID("set")
	if d, _ := st.Check(get, nil, []Key{{Name: []byte("r1"), Perm: Read, Pos: 1}}, nil); d != OK {
		t.Fatalf("get r1: %v", d)
	}
	if d, _ := st.Check(set, nil, nil, nil); d != DeniedCmd {
		t.Fatalf("set: %v", d)
	}
	if _, _, err := us.SetUser("alice", []string{"+set"}); err != nil {
		t.Fatal(err)
	}
	if d, p := u.State().Check(set, nil, []Key{{Name: []byte("r1"), Perm: Write, Pos: 1}}, nil); d != DeniedKey || p != 1 {
		t.Fatalf("set r1: %v %d", d, p)
	}
	if _, _, err := us.SetUser("alice", []string{"+nosuch"}); err == nil || err.Error() != "Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL" {
		t.Fatalf("err %v", err)
	}
}
