package server

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestCommandInfoMatchesRedis compares COMMAND INFO of every command and
// subcommand Damselfly implements with redis-server 7.0's: arity, flags,
// first/last/step, ACL categories, tips and key specs (without their
// notes, which are Redis's prose).
func TestCommandInfoMatchesRedis(t *testing.T) {
	addr := startRedis(t)
	s := startServer(t)
	ctx := context.Background()
	ours := newClient(t, s)
	theirs := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	t.Cleanup(func() { theirs.Close() })

	names, err := ours.Do(ctx, "COMMAND", "LIST").StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, name := range names {
		want, err := theirs.Do(ctx, "COMMAND", "INFO", name).Slice()
		if err != nil {
			t.Fatal(err)
		}
		if len(want) != 1 || want[0] == nil {
			continue // Redis 7.0 has no such command
		}
		got, err := ours.Do(ctx, "COMMAND", "INFO", name).Slice()
		if err != nil {
			t.Fatal(err)
		}
		w, g := infoFacts(want[0]), infoFacts(got[0])
		if !reflect.DeepEqual(w, g) {
			t.Errorf("COMMAND INFO %s:\n got: %v\nwant: %v", name, g, w)
		}
		compared++
	}
	if compared < 200 {
		t.Errorf("compared only %d commands", compared)
	}
	t.Logf("compared COMMAND INFO of %d commands and subcommands", compared)
}

// infoFacts is a COMMAND INFO entry without its subcommands (compared on
// their own) and without key-spec notes.
func infoFacts(v any) []any {
	e := slices.Clone(v.([]any))
	var specs []any
	for _, ks := range e[8].([]any) {
		var kept []any
		kv := ks.([]any)
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] != "notes" {
				kept = append(kept, kv[i], kv[i+1])
			}
		}
		specs = append(specs, kept)
	}
	e[8] = specs
	return e[:9]
}

// TestRegistrationsAgreeWithTable checks every reg(...) call of a command
// Redis 7.0 has against the generated facts: a registration that disagrees
// on arity or key positions is a bug in one of them.
func TestRegistrationsAgreeWithTable(t *testing.T) {
	tb := buildCommandTable()
	for name, cmd := range tb.all {
		r := cmd.reg
		if r == nil || !cmd.redis {
			continue
		}
		if r.arity != cmd.arity {
			t.Errorf("%s: registered arity %d, Redis 7.0 has %d", name, r.arity, cmd.arity)
		}
		if cmd.parent == nil && (r.first != cmd.firstKey || r.last != cmd.lastKey || r.step != cmd.step) {
			t.Logf("%s: registered keys %d,%d,%d; Redis 7.0 has %d,%d,%d (the table's are used)",
				name, r.first, r.last, r.step, cmd.firstKey, cmd.lastKey, cmd.step)
		}
	}
}

// TestTableHidesUnimplemented: entries without a handler are unknown
// commands and absent from COMMAND.
func TestTableHidesUnimplemented(t *testing.T) {
	tb := buildCommandTable()
	cmds := tb.finish()
	if tb.all["lolwut"] == nil || tb.all["lolwut"].fn != nil {
		t.Fatal("lolwut should be a table entry without a handler")
	}
	if cmds["lolwut"] != nil {
		t.Fatal("lolwut is listed as implemented")
	}
	s := startServer(t)
	r := dialRaw(t, s)
	r.do("LOLWUT", "VERSION", "5")
	if got := r.reply(); !strings.HasPrefix(got[0], "-ERR unknown command 'LOLWUT'") {
		t.Fatalf("LOLWUT: %q", got)
	}
	r.do("COMMAND", "INFO", "lolwut")
	if got := r.reply(); !reflect.DeepEqual(got, []string{"*1", "$-1"}) {
		t.Fatalf("COMMAND INFO lolwut: %q", got)
	}
	r.do("COMMAND", "COUNT")
	if got := r.reply(); got[0] != fmt.Sprintf(":%d", len(cmds)) {
		t.Fatalf("COMMAND COUNT %q, implemented %d", got, len(cmds))
	}
}

// TestExecRunsSelfLockingCommands: commands that take locks or wait for
// other goroutines themselves (REPLICAOF, SLAVEOF, DEBUG DIGEST,
// DEBUG DIGEST-VALUE, DEBUG RELOAD) run normally inside EXEC instead of
// deadlocking the data path, and other clients are served afterwards.
func TestExecRunsSelfLockingCommands(t *testing.T) {
	s := startServer(t)
	// A primary that accepts and never answers: the replica link waits.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { nc.Close() })
		}
	}()
	host, port, _ := net.SplitHostPort(ln.Addr().String())

	r := dialRaw(t, s)
	other := dialRaw(t, s)
	step := func(want string, args ...string) {
		t.Helper()
		r.do(args...)
		if got := r.reply(); got[0] != want {
			t.Fatalf("%v: got %q, want %q", args, got, want)
		}
	}
	step("+OK", "SET", "k", "v")
	for _, tx := range [][][]string{
		{{"DEBUG", "DIGEST"}, {"DEBUG", "DIGEST-VALUE", "k"}, {"SET", "k", "w"}},
		{{"REPLICAOF", host, port}, {"GET", "k"}},
		{{"SLAVEOF", "NO", "ONE"}, {"GET", "k"}},
		{{"SET", "a", "1"}, {"REPLICAOF", "NO", "ONE"}, {"DEBUG", "RELOAD"}, {"GET", "a"}},
	} {
		step("+OK", "MULTI")
		for _, args := range tx {
			step("+QUEUED", args...)
		}
		r.do("EXEC")
		got := r.reply()
		if got[0] != fmt.Sprintf("*%d", len(tx)) {
			t.Fatalf("EXEC of %v: %q", tx, got)
		}
		other.do("SET", "other", "x")
		if got := other.reply(); got[0] != "+OK" && !strings.HasPrefix(got[0], "-READONLY") {
			t.Fatalf("another client after EXEC of %v: %q", tx, got)
		}
	}
	step("$1", "GET", "a")
}

// TestExecKeylessCommandsDoNotDeadlock runs the keyless commands that lock
// shards one way or another inside MULTI/EXEC, each with a deadline.
func TestExecKeylessCommandsDoNotDeadlock(t *testing.T) {
	s := startServer(t)
	rdb := newClient(t, s)
	ctx := context.Background()
	rdb.Set(ctx, "k", "v", 0)
	for _, args := range [][]any{
		{"BGSAVE"}, {"FLUSHDB"}, {"DBSIZE"}, {"KEYS", "*"}, {"SCAN", "0"}, {"RANDOMKEY"}, {"INFO"},
		{"SWAPDB", "0", "1"}, {"MEMORY", "USAGE", "k"}, {"OBJECT", "ENCODING", "k"}, {"CONFIG", "SET", "maxmemory", "0"},
		{"CLIENT", "LIST"}, {"DEBUG", "POPULATE", "10"}, {"LASTSAVE"}, {"ROLE"}, {"WAIT", "0", "0"},
		{"EVAL", "return redis.call('set', KEYS[1], 'x')", "1", "k"}, {"SCRIPT", "FLUSH"}, {"FLUSHALL"},
		{"XREAD", "BLOCK", "10", "STREAMS", "s", "0"}, {"BLPOP", "l", "1"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Do(ctx, args...)
				return nil
			})
			if err == redis.Nil || err != nil && strings.HasPrefix(err.Error(), "ERR") {
				err = nil
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("MULTI %v EXEC: %v", args, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("MULTI %v EXEC: no reply in 5 s (deadlock)", args)
		}
	}
}

// TestEveryImplementedCommandHasSummary keeps the docs column complete.
func TestEveryImplementedCommandHasSummary(t *testing.T) {
	tb := buildCommandTable()
	for _, cmd := range tb.finish() {
		if cmd.summary == "" {
			t.Errorf("%s has no summary in cmdtable_docs.go", cmd.name)
		}
		for _, s := range cmd.visibleSubs() {
			if s.summary == "" {
				t.Errorf("%s has no summary in cmdtable_docs.go", s.name)
			}
		}
	}
	for name := range cmdSummaries {
		if tb.all[name] == nil {
			t.Errorf("summary of %q, which is no table entry", name)
		}
	}
}
