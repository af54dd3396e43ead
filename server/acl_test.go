package server

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// aclUser makes a user through the admin (default) connection.
func aclUser(t *testing.T, admin *redis.Client, name string, rules ...string) {
	t.Helper()
	args := []any{"ACL", "SETUSER", name}
	for _, r := range rules {
		args = append(args, r)
	}
	if err := admin.Do(context.Background(), args...).Err(); err != nil {
		t.Fatalf("ACL SETUSER %s: %v", name, err)
	}
}

func userClient(t *testing.T, s *Server, user, pass string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Username: user, Password: pass, Protocol: 2,
		MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// TestACLGoRedis: go-redis logs in as a user (AUTH user pass) and meets
// NOPERM on commands, keys and channels, inside MULTI, in scripts and on
// blocking commands; CLIENT LIST names the user.
func TestACLGoRedis(t *testing.T) {
	ctx := context.Background()
	s := startServer(t)
	admin := newClient(t, s)
	aclUser(t, admin, "app", "on", ">s3cret", "-@all", "+@read", "+@write", "+multi", "+exec", "+eval",
		"+blpop", "+subscribe", "+publish", "+client|list", "+fcall", "~app:*", "&news.*")
	app := userClient(t, s, "app", "s3cret")
	if err := app.Set(ctx, "app:1", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := app.Get(ctx, "app:1").Result(); err != nil || v != "v" {
		t.Fatalf("GET app:1: %q %v", v, err)
	}
	want := "NOPERM this user has no permissions to access one of the keys used as arguments"
	if err := app.Get(ctx, "other").Err(); err == nil || err.Error() != want {
		t.Fatalf("GET other: %v", err)
	}
	if err := app.ConfigGet(ctx, "maxmemory").Err(); err == nil || err.Error() != "NOPERM this user has no permissions to run the 'config|get' command" {
		t.Fatalf("CONFIG GET: %v", err)
	}
	if err := app.Publish(ctx, "sports", "x").Err(); err == nil ||
		err.Error() != "NOPERM this user has no permissions to access one of the channels used as arguments" {
		t.Fatalf("PUBLISH sports: %v", err)
	}
	if err := app.Publish(ctx, "news.today", "x").Err(); err != nil {
		t.Fatal(err)
	}
	// A blocking command on a forbidden key is refused at once.
	if err := app.BLPop(ctx, time.Second, "other").Err(); err == nil || err.Error() != want {
		t.Fatalf("BLPOP other: %v", err)
	}
	// MULTI: refused at queue time, so EXEC aborts.
	_, err := app.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "app:2", "v", 0)
		p.Set(ctx, "other", "v", 0)
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "EXECABORT") {
		t.Fatalf("MULTI with a forbidden key: %v", err)
	}
	if n, _ := admin.Exists(ctx, "app:2").Result(); n != 0 {
		t.Fatal("the aborted transaction wrote")
	}
	// Scripts: redis.call is checked with the caller's user.
	err = app.Eval(ctx, "return redis.call('get', 'other')", nil).Err()
	if err == nil || !strings.Contains(err.Error(), "The user executing the script can't access at least one of the keys") {
		t.Fatalf("EVAL on a forbidden key: %v", err)
	}
	if v, err := app.Eval(ctx, "return redis.call('get', KEYS[1])", []string{"app:1"}).Result(); err != nil || v != "v" {
		t.Fatalf("EVAL: %v %v", v, err)
	}
	// Functions too.
	lib := "#!lua name=acllib\nredis.register_function('peek', function(keys, args) return redis.call('get', args[1]) end)"
	if err := admin.FunctionLoad(ctx, lib).Err(); err != nil {
		t.Fatal(err)
	}
	err = app.FCall(ctx, "peek", nil, "other").Err()
	if err == nil || !strings.Contains(err.Error(), "The user executing the script can't access at least one of the keys") {
		t.Fatalf("FCALL on a forbidden key: %v", err)
	}
	if v, err := app.FCall(ctx, "peek", nil, "app:1").Result(); err != nil || v != "v" {
		t.Fatalf("FCALL: %v %v", v, err)
	}
	// Pub/Sub: subscribing to a forbidden channel is refused.
	sub := app.Subscribe(ctx, "sports")
	if _, err := sub.Receive(ctx); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("SUBSCRIBE sports: %v", err)
	}
	sub.Close()
	list, err := app.ClientList(ctx).Result()
	if err != nil || !strings.Contains(list, "user=app ") || !strings.Contains(list, "user=default ") {
		t.Fatalf("CLIENT LIST: %q %v", list, err)
	}
	// Wrong password: WRONGPASS, logged.
	bad := userClient(t, s, "app", "nope")
	if err := bad.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("bad password: %v", err)
	}
	log, err := admin.Do(ctx, "ACL", "LOG").Slice()
	if err != nil || len(log) == 0 {
		t.Fatalf("ACL LOG: %v %v", log, err)
	}
	first := fmt.Sprint(log[0])
	if !strings.Contains(first, "reason auth") || !strings.Contains(first, "username app") {
		t.Fatalf("newest log entry: %s", first)
	}
}

// TestACLExecRecheck: rules changed between MULTI and EXEC refuse the
// queued command at EXEC, as Redis does.
func TestACLExecRecheck(t *testing.T) {
	s := startServer(t)
	admin := newClient(t, s)
	ctx := context.Background()
	aclUser(t, admin, "u", "on", ">p", "+@all", "~*")
	r := dialRaw(t, s)
	r.do("AUTH", "u", "p")
	r.reply()
	r.do("MULTI")
	r.reply()
	r.do("SET", "k", "v")
	r.reply()
	aclUser(t, admin, "u", "-set")
	r.do("EXEC")
	got := r.reply()
	want := []string{"*1", "-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. " +
		"This command is no longer allowed for the following reason: no permission to execute the command or subcommand"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("EXEC: %q", got)
	}
	if n, _ := admin.Exists(ctx, "k").Result(); n != 0 {
		t.Fatal("refused command ran")
	}
	e, _ := admin.Do(ctx, "ACL", "LOG", "1").Slice()
	if s := fmt.Sprint(e); !strings.Contains(s, "context multi") || !strings.Contains(s, "object set") {
		t.Fatalf("log: %s", s)
	}
}

// TestACLDelUserDisconnects: deleting a user closes its connections (the
// caller's own after its reply); ACL LOAD closes every non-default user's.
func TestACLDelUserDisconnects(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "users.acl")
	if err := os.WriteFile(file, []byte("user default on nopass ~* &* +@all\nuser bob on >pw ~* +@all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(c *Config) { c.ACLFile = file })
	ctx := context.Background()
	admin := newClient(t, s)
	bob := dialRaw(t, s)
	bob.do("AUTH", "bob", "pw")
	if got := bob.reply(); got[0] != "+OK" {
		t.Fatalf("AUTH bob: %q", got)
	}
	if n, err := admin.Do(ctx, "ACL", "DELUSER", "bob").Int(); err != nil || n != 1 {
		t.Fatalf("DELUSER: %d %v", n, err)
	}
	expectClosed(t, bob)
	// A user deleting itself gets the reply, then the connection closes.
	aclUser(t, admin, "carl", "on", ">pw", "+@all", "~*")
	carl := dialRaw(t, s)
	carl.do("AUTH", "carl", "pw")
	carl.reply()
	carl.do("ACL", "DELUSER", "carl")
	if got := carl.reply(); got[0] != ":1" {
		t.Fatalf("self DELUSER: %q", got)
	}
	expectClosed(t, carl)
	// ACL LOAD brings bob back and closes the clients of the users it replaces.
	if err := admin.Do(ctx, "ACL", "LOAD").Err(); err != nil {
		t.Fatal(err)
	}
	bob = dialRaw(t, s)
	bob.do("AUTH", "bob", "pw")
	bob.reply()
	if err := admin.Do(ctx, "ACL", "LOAD").Err(); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, bob)
	// The default user's clients stay.
	if err := admin.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
}

func expectClosed(t *testing.T, r *rawConn) {
	t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	r.do("PING")
	if line, err := r.rd.ReadString('\n'); err == nil {
		t.Fatalf("connection still open: %q", line)
	}
}

// TestACLFile: ACL SAVE writes the users (temp file and rename), ACL LOAD
// reads them back, a bad file changes nothing and says why, and a server
// whose ACL file cannot be read does not start.
func TestACLFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "users.acl")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(c *Config) { c.ACLFile = file })
	ctx := context.Background()
	admin := newClient(t, s)
	aclUser(t, admin, "alice", "on", ">pw", "~k*", "+get")
	if err := admin.Do(ctx, "ACL", "SAVE").Err(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(file)
	want := "user alice on #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~k* resetchannels -@all +get\n" +
		"user default on nopass ~* &* +@all\n"
	if string(data) != want {
		t.Fatalf("saved:\n%s", data)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
	admin.Do(ctx, "ACL", "DELUSER", "alice")
	if err := admin.Do(ctx, "ACL", "LOAD").Err(); err != nil {
		t.Fatal(err)
	}
	if users, _ := admin.Do(ctx, "ACL", "USERS").StringSlice(); strings.Join(users, ",") != "alice,default" {
		t.Fatalf("users after LOAD: %v", users)
	}
	os.WriteFile(file, []byte("user default on nopass ~* &* +@all\nuser bob on >x +nosuch ~*\nfoo bar\nuser bob\n"), 0o600)
	err := admin.Do(ctx, "ACL", "LOAD").Err()
	wantErr := "ERR " + file + ":2: Error in applying operation '+nosuch': Unknown command or category name in ACL. " + file +
		":3 should start with user keyword followed by the username. WARNING: Duplicate user 'bob' found on line 4. " +
		"WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
	if err == nil || err.Error() != wantErr {
		t.Fatalf("bad file:\n got %v\nwant %s", err, wantErr)
	}
	if users, _ := admin.Do(ctx, "ACL", "USERS").StringSlice(); strings.Join(users, ",") != "alice,default" {
		t.Fatalf("users after a failed LOAD: %v", users)
	}
	// Start-up with a missing file fails.
	srv := New(Config{Port: 0, Bind: "127.0.0.1", Shards: 2, Dir: dir, ACLFile: filepath.Join(dir, "missing.acl")})
	if err := srv.Start(Config{Port: 0, Bind: "127.0.0.1", ACLFile: filepath.Join(dir, "missing.acl")}); err == nil {
		srv.Close()
		t.Fatal("started without its ACL file")
	}
}

// TestACLRequirePass: requirepass is the default user's password, and
// CONFIG SET requirepass changes it; config "user" directives apply.
func TestACLRequirePass(t *testing.T) {
	s := startServer(t, func(c *Config) {
		c.RequirePass = "top"
		c.ACLUsers = [][]string{{"ops", "on", ">opw", "+@all", "~*"}}
	})
	ctx := context.Background()
	r := dialRaw(t, s)
	r.do("PING")
	if got := r.reply(); got[0] != "-NOAUTH Authentication required." {
		t.Fatalf("PING: %q", got)
	}
	r.do("AUTH", "top")
	r.reply()
	r.do("ACL", "WHOAMI")
	if got := r.reply(); got[1] != "default" {
		t.Fatalf("WHOAMI: %q", got)
	}
	ops := userClient(t, s, "ops", "opw")
	if err := ops.ConfigSet(ctx, "requirepass", "new").Err(); err != nil {
		t.Fatal(err)
	}
	if err := userClient(t, s, "default", "new").Ping(ctx).Err(); err != nil {
		t.Fatalf("AUTH default new: %v", err)
	}
	if err := userClient(t, s, "", "top").Ping(ctx).Err(); err == nil {
		t.Fatal("the old password still works")
	}
	// A connection that never authenticated is let in once the default
	// user needs no password, as in Redis.
	r2 := dialRaw(t, s)
	r2.do("PING")
	r2.reply()
	if err := ops.ConfigSet(ctx, "requirepass", "").Err(); err != nil {
		t.Fatal(err)
	}
	r2.do("PING")
	if got := r2.reply(); got[0] != "+PONG" {
		t.Fatalf("PING after requirepass was cleared: %q", got)
	}
	if err := ValidateACLUser([]string{"x", "+nosuch"}); err == nil ||
		err.Error() != "Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL" {
		t.Fatalf("ValidateACLUser: %v", err)
	}
}

// TestACLConcurrentChanges runs commands of restricted users while their
// rules change and users come and go (for -race).
func TestACLConcurrentChanges(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	admin := newClient(t, s)
	aclUser(t, admin, "w", "on", ">p", "+@all", "~k*")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := userClient(t, s, "w", "p")
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				c.Set(ctx, fmt.Sprintf("k%d", j%10), "v", 0)
				c.Get(ctx, "other")
			}
		}(i)
	}
	for i := 0; i < 50; i++ {
		aclUser(t, admin, "w", "-set")
		aclUser(t, admin, "w", "+set", "~o*")
		aclUser(t, admin, fmt.Sprintf("tmp%d", i), "on", "nopass")
		admin.Do(ctx, "ACL", "DELUSER", fmt.Sprintf("tmp%d", i))
		admin.Do(ctx, "ACL", "LOG")
	}
	close(stop)
	wg.Wait()
}

// TestACLLogMatchesRedis: ACL LOG's entries have Redis 7.0's fields and
// values (the age and client info aside).
func TestACLLogMatchesRedis(t *testing.T) {
	redisAddr := startRedis(t)
	s := startServer(t)
	run := func(addr string) []string {
		admin := dialAddr(t, addr)
		for _, cmd := range [][]string{{"ACL", "LOG", "RESET"}, {"ACL", "SETUSER", "lg", "on", ">p", "+get", "+multi", "~a*", "&c"}} {
			admin.do(cmd...)
			admin.reply()
		}
		r := dialAddr(t, addr)
		for _, cmd := range [][]string{{"AUTH", "lg", "bad"}, {"AUTH", "lg", "p"}, {"GET", "b"}, {"GET", "b"}, {"SET", "a", "v"},
			{"MULTI"}, {"GET", "c"}, {"HELLO", "2", "AUTH", "nouser", "x"}} {
			r.do(cmd...)
			r.reply()
		}
		admin.do("ACL", "LOG")
		got := admin.reply()
		admin.do("ACL", "DELUSER", "lg")
		admin.reply()
		admin.do("ACL", "LOG", "RESET")
		admin.reply()
		for i := 0; i+2 < len(got); i++ {
			if got[i] == "age-seconds" || got[i] == "client-info" {
				got[i+1], got[i+2] = "$?", "?"
			}
		}
		return got
	}
	want, got := run(redisAddr), run(s.Addr())
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("ACL LOG\n got: %q\nwant: %q", got, want)
	}
}

// TestACLRedisCLI: redis-cli --user --pass logs in as a user.
func TestACLRedisCLI(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed (apt-get install -y redis-tools); skipping")
	}
	s := startServer(t)
	aclUser(t, newClient(t, s), "cli", "on", ">pw", "+acl|whoami", "+get", "~*")
	out, err := exec.Command(cli, "-p", fmt.Sprint(s.Port()), "--user", "cli", "--pass", "pw", "--no-auth-warning",
		"ACL", "WHOAMI").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "cli" {
		t.Fatalf("redis-cli --user: %q %v", out, err)
	}
	out, _ = exec.Command(cli, "-p", fmt.Sprint(s.Port()), "--user", "cli", "--pass", "pw", "--no-auth-warning",
		"SET", "k", "v").CombinedOutput()
	if !strings.Contains(string(out), "NOPERM this user has no permissions to run the 'set' command") {
		t.Fatalf("redis-cli SET: %q", out)
	}
}

// TestACLPubSubRevoked: a subscriber whose user loses the channel is
// disconnected; one whose channels are still allowed stays.
func TestACLPubSubRevoked(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	admin := newClient(t, s)
	aclUser(t, admin, "sub", "on", ">p", "+@all", "~*", "&news.*", "&alerts")
	news, alerts := dialRaw(t, s), dialRaw(t, s)
	for _, r := range []*rawConn{news, alerts} {
		r.do("AUTH", "sub", "p")
		r.reply()
	}
	news.do("PSUBSCRIBE", "news.*")
	news.reply()
	alerts.do("SUBSCRIBE", "alerts")
	alerts.reply()
	aclUser(t, admin, "sub", "resetchannels", "&alerts")
	expectClosed(t, news)
	alerts.do("PING")
	if got := alerts.reply(); got[0] != "*2" {
		t.Fatalf("alerts subscriber: %q", got)
	}
	if n, err := admin.Publish(ctx, "alerts", "x").Result(); err != nil || n != 1 {
		t.Fatalf("PUBLISH alerts: %d %v", n, err)
	}
}

// TestACLClientKillUser: CLIENT KILL USER closes that user's connections
// only.
func TestACLClientKillUser(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	admin := newClient(t, s)
	aclUser(t, admin, "k", "on", ">p", "+@all", "~*")
	r := dialRaw(t, s)
	r.do("AUTH", "k", "p")
	r.reply()
	if n, err := admin.Do(ctx, "CLIENT", "KILL", "USER", "k").Int(); err != nil || n != 1 {
		t.Fatalf("CLIENT KILL USER k: %d %v", n, err)
	}
	expectClosed(t, r)
	if err := admin.Do(ctx, "CLIENT", "KILL", "USER", "nosuch").Err(); err == nil || err.Error() != "ERR No such user 'nosuch'" {
		t.Fatalf("CLIENT KILL USER nosuch: %v", err)
	}
	if err := admin.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
}
