package resp

import (
	"bytes"
	"testing"
)

func TestPeekKey(t *testing.T) {
	get := "*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n"
	set := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n"
	for _, tc := range []struct {
		in        string
		name, key string
		n         int
	}{
		{get, "GET", "key", len(get)},
		{get + set, "GET", "key", len(get)},
		{set, "SET", "k", len(set)},
		{"*2\r\n$0\r\n\r\n$0\r\n\r\n", "", "", 16},
	} {
		name, key, n, ok := PeekKey([]byte(tc.in))
		if !ok || string(name) != tc.name || string(key) != tc.key || n != tc.n {
			t.Errorf("PeekKey(%q) = %q %q %d %v, want %q %q %d", tc.in, name, key, n, ok, tc.name, tc.key, tc.n)
		}
	}
	for _, in := range []string{
		"", "GET key\r\n", "*1\r\n$4\r\nPING\r\n", // inline, one argument
		get[:len(get)-1], set[:20], // partial
		"*2\r\n$3\r\nGET\r\n$4\r\nkey\r\n",                          // length does not match
		"*2\r\n$3\r\nGET\r\n:3\r\nkey\r\n",                          // not a bulk
		"*2\r\n$-1\r\n$3\r\nkey\r\n",                                // negative length
		"*2\r\n$1234567890\r\nGET\r\n",                              // too long a length
		"*17\r\n" + string(bytes.Repeat([]byte("$1\r\na\r\n"), 17)), // too many arguments
		"*2\n$3\r\nGET\r\n$3\r\nkey\r\n",                            // no \r
	} {
		if _, _, _, ok := PeekKey([]byte(in)); ok {
			t.Errorf("PeekKey(%q) ok, want not", in)
		}
	}
}

func TestPeekKeyArg(t *testing.T) {
	hset := "*4\r\n$4\r\nHSET\r\n$1\r\nh\r\n$5\r\nfield\r\n$1\r\nv\r\n"
	get := "*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n"
	for _, tc := range []struct {
		in             string
		name, key, arg string
		noArg          bool
		n              int
	}{
		{in: hset + get, name: "HSET", key: "h", arg: "field", n: len(hset)},
		{in: get + hset, name: "GET", key: "key", noArg: true, n: len(get)},
		{in: "*3\r\n$4\r\nHGET\r\n$1\r\nh\r\n$0\r\n\r\n", name: "HGET", key: "h", arg: "", n: 27},
	} {
		name, key, arg, n, ok := PeekKeyArg([]byte(tc.in))
		if !ok || string(name) != tc.name || string(key) != tc.key || string(arg) != tc.arg || (arg == nil) != tc.noArg || n != tc.n {
			t.Errorf("PeekKeyArg(%q) = %q %q %q %d %v, want %q %q %q %d", tc.in, name, key, arg, n, ok, tc.name, tc.key, tc.arg, tc.n)
		}
	}
	if _, _, _, _, ok := PeekKeyArg([]byte(hset[:len(hset)-3])); ok {
		t.Error("PeekKeyArg accepted a partial request")
	}
}

// FuzzPeekKey checks PeekKey against Next: whatever it accepts, Next parses
// as the same request, of the same length, with the same first arguments.
func FuzzPeekKey(f *testing.F) {
	f.Add([]byte("*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n"))
	f.Add([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		name, key, n, ok := PeekKey(in)
		if !ok {
			return
		}
		p := NewRequestReader()
		p.Authed = true
		args, m, err := p.Next(in)
		if err != nil || m != n || len(args) < 2 || !bytes.Equal(args[0], name) || !bytes.Equal(args[1], key) {
			t.Fatalf("PeekKey %q %q %d; Next %q %d %v", name, key, n, args, m, err)
		}
		_, _, arg, _, _ := PeekKeyArg(in)
		if (len(args) > 2) != (arg != nil) || (arg != nil && !bytes.Equal(args[2], arg)) {
			t.Fatalf("PeekKeyArg's third argument %q; Next %q", arg, args)
		}
	})
}
