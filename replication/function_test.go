package replication_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	libA = "#!lua name=liba\nredis.register_function('incr2', function(keys) redis.call('incr', keys[1]) return redis.call('incr', keys[1]) end)\n" +
		"redis.register_function{function_name='peek', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}"
	libB = "#!lua name=libb\nredis.register_function{function_name='hello', callback=function() return 'hi' end, flags={'no-writes'}}"
)

func libNames(t *testing.T, c *redis.Client) string {
	t.Helper()
	libs, err := c.FunctionList(context.Background(), redis.FunctionListQuery{}).Result()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range libs {
		names = append(names, l.Name)
	}
	return strings.Join(names, ",")
}

// FUNCTION libraries reach replicas: in the full sync (as RDB_OPCODE_FUNCTION2)
// and in the stream (FUNCTION LOAD/DELETE), to a redis-server replica and
// from a redis-server primary; read-only functions run on replicas.
func TestFunctionReplication(t *testing.T) {
	ctx := context.Background()
	p := startServer(t)
	pc := client(t, p.Addr())
	if err := pc.FunctionLoad(ctx, libA).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := pc.FCall(ctx, "incr2", []string{"n"}).Int(); err != nil || v != 2 {
		t.Fatalf("FCALL incr2 = %v, %v", v, err)
	}
	// A Damselfly replica and a redis-server replica, by full sync.
	d := startServer(t)
	dc := client(t, d.Addr())
	replicaOf(t, dc, p.Addr())
	h, port := hostPort(t, p.Addr())
	rc := client(t, redisServer(t, "--replicaof", h, port))
	waitConverged(t, pc, dc, rc)
	for name, c := range map[string]*redis.Client{"damselfly": dc, "redis-server": rc} {
		if got := libNames(t, c); got != "liba" {
			t.Fatalf("%s replica after full sync has libraries %q", name, got)
		}
		if v, err := c.FCallRO(ctx, "peek", []string{"n"}).Text(); err != nil || v != "2" {
			t.Fatalf("%s replica: FCALL_RO peek = %q, %v", name, v, err)
		}
		if err := c.FCall(ctx, "incr2", []string{"n"}).Err(); err == nil || err.Error() != "READONLY You can't write against a read only replica." {
			t.Fatalf("%s replica: FCALL of a writing function: %v", name, err)
		}
		if err := c.FunctionLoad(ctx, libB).Err(); err == nil || err.Error() != "READONLY You can't write against a read only replica." {
			t.Fatalf("%s replica: FUNCTION LOAD: %v", name, err)
		}
	}
	// In the stream: a new library, a call's effects, a deletion.
	if err := pc.FunctionLoad(ctx, libB).Err(); err != nil {
		t.Fatal(err)
	}
	pc.FCall(ctx, "incr2", []string{"n"})
	if err := pc.FunctionDelete(ctx, "liba").Err(); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, pc, dc, rc)
	for name, c := range map[string]*redis.Client{"damselfly": dc, "redis-server": rc} {
		waitFor(t, 5*time.Second, name+" replica to follow FUNCTION LOAD/DELETE", func() bool { return libNames(t, c) == "libb" })
		if v := c.Get(ctx, "n").Val(); v != "4" {
			t.Fatalf("%s replica: n = %q after two FCALLs", name, v)
		}
		if v, err := c.FCallRO(ctx, "hello", nil).Text(); err != nil || v != "hi" {
			t.Fatalf("%s replica: FCALL_RO hello = %q, %v", name, v, err)
		}
	}

	// From a redis-server primary to a Damselfly replica.
	raddr := redisServer(t)
	rp := client(t, raddr)
	if err := rp.FunctionLoad(ctx, libA).Err(); err != nil {
		t.Fatal(err)
	}
	rp.FCall(ctx, "incr2", []string{"n"})
	d2 := startServer(t)
	dc2 := client(t, d2.Addr())
	replicaOf(t, dc2, raddr)
	waitConverged(t, rp, dc2)
	if got := libNames(t, dc2); got != "liba" {
		t.Fatalf("Damselfly replica of redis-server has libraries %q", got)
	}
	if err := rp.FunctionLoad(ctx, libB).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the Damselfly replica to load libb from the stream", func() bool { return libNames(t, dc2) == "liba,libb" })
	if v, err := dc2.FCallRO(ctx, "peek", []string{"n"}).Text(); err != nil || v != "2" {
		t.Fatalf("FCALL_RO peek on the Damselfly replica = %q, %v", v, err)
	}
}
