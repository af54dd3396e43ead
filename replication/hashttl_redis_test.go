package replication_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/internal/redistest"
	"github.com/damselflydb/damselfly/server"
	"github.com/redis/go-redis/v9"
)

// TestHashFieldTTLsIntoRedis: hashes with field deadlines leave Damselfly
// in its RDB (type 24, RDB_TYPE_HASH_METADATA) and as DUMP payloads, and a
// real Redis 7.4 or 8.0 loads both with the same fields, values, field
// deadlines and key deadline, and the same DEBUG DIGEST. A Redis DUMP of
// the same hashes restores into Damselfly the same way. The redis-server
// binaries are given by DAMSELFLY_REDIS74 and DAMSELFLY_REDIS80 (paths);
// each subtest skips when its variable is unset.
func TestHashFieldTTLsIntoRedis(t *testing.T) {
	for _, env := range []string{"DAMSELFLY_REDIS74", "DAMSELFLY_REDIS80"} {
		t.Run(env, func(t *testing.T) {
			bin := os.Getenv(env)
			if bin == "" {
				t.Skipf("%s is not set (path to a redis-server 7.4/8.0 binary): skipping the RDB type 24 interoperability check", env)
			}
			hashTTLsIntoRedis(t, bin)
		})
	}
}

func hashTTLsIntoRedis(t *testing.T, bin string) {
	ctx := context.Background()
	ddir := t.TempDir()
	d := startServer(t, func(c *server.Config) { c.Dir = ddir })
	dc := client(t, d.Addr())
	far := time.Now().Add(time.Hour).UnixMilli()
	// small: a listpack in Redis; big: a hashtable; ttlkey: a key deadline
	// too; plain: no field deadline (type 4/16, for the digest).
	dc.HSet(ctx, "small", "a", "1", "b", "2", "c", "3")
	dc.Do(ctx, "HPEXPIREAT", "small", far, "FIELDS", "1", "a")
	dc.Do(ctx, "HPEXPIREAT", "small", far+5000, "FIELDS", "1", "c")
	for i := 0; i < 300; i++ {
		dc.HSet(ctx, "big", fmt.Sprintf("field:%d", i), fmt.Sprintf("value-%d-%s", i, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"))
		if i%3 == 0 {
			dc.Do(ctx, "HPEXPIREAT", "big", far+int64(i), "FIELDS", "1", fmt.Sprintf("field:%d", i))
		}
	}
	dc.HSet(ctx, "ttlkey", "x", "1", "y", "2")
	dc.Do(ctx, "HPEXPIREAT", "ttlkey", far+77, "FIELDS", "1", "y")
	dc.PExpireAt(ctx, "ttlkey", time.UnixMilli(far+99))
	dc.HSet(ctx, "plain", "p", "q")
	keys := []string{"small", "big", "ttlkey", "plain"}
	if err := dc.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	// The RDB, loaded by redis-server.
	dir := t.TempDir()
	copyFile(t, filepath.Join(ddir, "dump.rdb"), filepath.Join(dir, "dump.rdb"))
	rc := client(t, startRedisBin(t, bin, dir))
	for _, k := range keys {
		if got, want := hashState(t, rc, k), hashState(t, dc, k); got != want {
			t.Errorf("RDB %s:\nredis     %s\ndamselfly %s", k, got, want)
		}
	}
	if got, want := rc.Do(ctx, "DEBUG", "DIGEST").Val(), dc.Do(ctx, "DEBUG", "DIGEST").Val(); got != want {
		t.Errorf("DEBUG DIGEST after loading our RDB: redis %v, damselfly %v", got, want)
	}

	// DUMP from Damselfly, RESTORE into Redis; and back.
	for _, k := range keys {
		p, err := dc.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if err := rc.Do(ctx, "RESTORE", "r:"+k, 0, p, "ABSTTL").Err(); err != nil {
			t.Fatalf("RESTORE of our DUMP of %s into redis: %v", k, err)
		}
		if got, want := hashState(t, rc, "r:"+k), hashState(t, dc, k); got != fieldsOnly(want) {
			t.Errorf("DUMP/RESTORE %s:\nredis     %s\ndamselfly %s", k, got, want)
		}
		rp, err := rc.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if err := dc.Do(ctx, "RESTORE", "b:"+k, 0, rp).Err(); err != nil {
			t.Fatalf("RESTORE of redis's DUMP of %s into damselfly: %v", k, err)
		}
		if got, want := hashState(t, dc, "b:"+k), hashState(t, rc, k); got != fieldsOnly(want) {
			t.Errorf("redis DUMP -> damselfly %s:\ndamselfly %s\nredis     %s", k, got, want)
		}
	}

	// The same redis-server as a replica of Damselfly: the full sync (type
	// 24 in the RDB stream), then the field-expiry commands and the
	// primary's active field expiry (one HDEL per field), to equal digests.
	host, port := hostPort(t, d.Addr())
	if err := rc.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the redis replica's link", func() bool { return info(rc, "replication")["master_link_status"] == "up" })
	dc.HSet(ctx, "after", "a", "1", "b", "2", "c", "3")
	dc.Do(ctx, "HEXPIRE", "after", "100", "FIELDS", "1", "a")
	dc.Do(ctx, "HPERSIST", "after", "FIELDS", "1", "a")
	if v := info(rc, "server")["redis_version"]; v >= "8" { // Redis 8's commands
		dc.Do(ctx, "HSETEX", "after2", "PX", "100000", "FIELDS", "1", "f", "v")
		dc.Do(ctx, "HGETEX", "after2", "EX", "200", "FIELDS", "1", "f")
		dc.Do(ctx, "HSETEX", "after3", "PX", "100000", "FIELDS", "2", "f", "v", "g", "w")
		dc.Do(ctx, "HGETDEL", "after3", "FIELDS", "1", "g")
	}
	dc.HSet(ctx, "short", "a", "1", "b", "2", "c", "3")
	dc.Do(ctx, "HPEXPIRE", "short", "50", "FIELDS", "2", "a", "b")
	waitFor(t, 5*time.Second, "short's fields to expire on the primary", func() bool { return dc.HLen(ctx, "short").Val() == 1 })
	waitFor(t, 10*time.Second, "the redis replica to catch up", func() bool {
		return info(rc, "replication")["master_repl_offset"] == info(dc, "replication")["master_repl_offset"]
	})
	for _, k := range dc.Keys(ctx, "*").Val() {
		if k == "big" || k == "b:big" {
			continue
		}
		if got, want := hashState(t, rc, k), hashState(t, dc, k); got != want {
			t.Errorf("%s on the redis replica %s, on damselfly %s", k, got, want)
		}
		if got, want := rc.Do(ctx, "DEBUG", "DIGEST-VALUE", k).Val(), dc.Do(ctx, "DEBUG", "DIGEST-VALUE", k).Val(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: DEBUG DIGEST-VALUE on the redis replica %v, on damselfly %v", k, got, want)
		}
	}
	if got, want := rc.Do(ctx, "DEBUG", "DIGEST").Val(), dc.Do(ctx, "DEBUG", "DIGEST").Val(); got != want {
		t.Errorf("DEBUG DIGEST of the redis replica %v, of damselfly %v", got, want)
	}
}

// hashState prints a hash's fields, values and field deadlines (sorted)
// and the key's deadline.
func hashState(t *testing.T, c *redis.Client, key string) string {
	ctx := context.Background()
	m, err := c.HGetAll(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	fields := make([]string, 0, len(m))
	for f := range m {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	args := []any{"HPEXPIRETIME", key, "FIELDS", len(fields)}
	for _, f := range fields {
		args = append(args, f)
	}
	var ttls []any
	if len(fields) > 0 {
		ttls, err = c.Do(ctx, args...).Slice()
		if err != nil {
			t.Fatal(err)
		}
	}
	s := ""
	for i, f := range fields {
		s += f + "=" + m[f] + "@" + fmt.Sprint(ttls[i]) + " "
	}
	return s + "|key@" + strconv.FormatInt(c.PExpireTime(ctx, key).Val().Milliseconds(), 10)
}

// fieldsOnly drops the key deadline (RESTORE with TTL 0 sets none: PEXPIRETIME -1, printed 0).
func fieldsOnly(s string) string {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '|' {
			return s[:i] + "|key@0"
		}
	}
	return s
}

func copyFile(t *testing.T, from, to string) {
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// startRedisBin runs the redis-server at bin on dir's dump.rdb
// (internal/redistest waits until it answers as itself, loaded).
func startRedisBin(t *testing.T, bin, dir string) string {
	return redistest.Start(t, bin, "--save", "", "--appendonly", "no", "--enable-debug-command", "yes",
		"--dir", dir, "--dbfilename", "dump.rdb", "--logfile", filepath.Join(dir, "redis.log")).Addr
}
