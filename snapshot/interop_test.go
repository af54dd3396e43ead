package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/damselflydb/damselfly/shard"
)

func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH: skipping the Redis interop test", tool)
		}
	}
}

// freePort returns a free port in 7200-7299 (the range reserved for this
// work's servers).
func freePort(t *testing.T) int {
	for p := 7200 + int(time.Now().UnixNano()%50); p < 7300; p++ {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err == nil {
			l.Close()
			return p
		}
	}
	t.Fatal("no free port in 7200-7299")
	return 0
}

// startRedis runs redis-server on dir/dump.rdb and returns a client.
func startRedis(t *testing.T, dir string) *redis.Client {
	t.Helper()
	port := freePort(t)
	logf := filepath.Join(dir, "redis.log")
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--dbfilename", "dump.rdb", "--save", "", "--appendonly", "no", "--logfile", logf)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	rc := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), PoolSize: 4})
	t.Cleanup(func() { rc.Close() })
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(30 * time.Millisecond) {
		if err := rc.Ping(ctx).Err(); err == nil {
			return rc
		} else if strings.Contains(err.Error(), "LOADING") {
			continue
		}
	}
	log, _ := os.ReadFile(logf)
	t.Fatalf("redis-server did not start:\n%s", log)
	return nil
}

// redisContents reads every key of every database of a redis-server into
// the form contents uses.
func redisContents(t *testing.T, rc *redis.Client) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for db := 0; db < 16; db++ {
		c := rc.Conn()
		if err := c.Select(ctx, db).Err(); err != nil {
			t.Fatal(err)
		}
		keys, err := c.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			typ := c.Type(ctx, k).Val()
			exp := c.PExpireTime(ctx, k).Val()
			ms := int64(0)
			if exp > 0 {
				ms = exp.Milliseconds()
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%s@%d:", typ, ms)
			switch typ {
			case "string":
				fmt.Fprintf(&b, "%q", c.Get(ctx, k).Val())
			case "list":
				for _, v := range c.LRange(ctx, k, 0, -1).Val() {
					fmt.Fprintf(&b, "%q,", v)
				}
			case "set":
				var s []string
				for _, m := range c.SMembers(ctx, k).Val() {
					s = append(s, strconv.Quote(m))
				}
				slices.Sort(s)
				b.WriteString(strings.Join(s, ","))
			case "hash":
				var s []string
				for f, v := range c.HGetAll(ctx, k).Val() {
					s = append(s, strconv.Quote(f)+"="+strconv.Quote(v))
				}
				slices.Sort(s)
				b.WriteString(strings.Join(s, ","))
			case "zset":
				for _, z := range c.ZRangeWithScores(ctx, k, 0, -1).Val() {
					fmt.Fprintf(&b, "%q=%s,", z.Member, strconv.FormatFloat(z.Score, 'g', 17, 64))
				}
			default:
				t.Fatalf("unexpected type %s of %s", typ, k)
			}
			out[fmt.Sprintf("%d %s", db, k)] = b.String()
		}
		c.Close()
	}
	return out
}

// TestDumpLoadsInRedis: our dump passes redis-check-rdb and redis-server
// loads it with the same contents.
func TestDumpLoadsInRedis(t *testing.T) {
	needTools(t, "redis-server", "redis-check-rdb")
	st := shard.NewStore(3, 16)
	fillAllTypes(st, time.Now().Add(time.Hour).UnixMilli())
	want := contents(st, time.Now().UnixMilli(), true)
	data, _ := save(t, st, Options{})
	dir := t.TempDir()
	path := filepath.Join(dir, "dump.rdb")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("redis-check-rdb", path).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("RDB looks OK")) {
		t.Fatalf("redis-check-rdb: %v\n%s", err, out)
	}
	compareContents(t, want, redisContents(t, startRedis(t, dir)))
}

// TestRedisDumpLoads: a dump written by redis-server loads into Damselfly
// with the same contents.
func TestRedisDumpLoads(t *testing.T) {
	needTools(t, "redis-server")
	dir := t.TempDir()
	rc := startRedis(t, dir)
	ctx := context.Background()
	c := rc.Conn()
	defer c.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for db := 0; db < 3; db++ {
		must(c.Select(ctx, db).Err())
		must(c.Set(ctx, "str", "hello", 0).Err())
		must(c.Set(ctx, "int", "-12345", 0).Err())
		must(c.Set(ctx, "long", strings.Repeat("abc", 200), 0).Err())
		must(c.Set(ctx, "ttl", "x", time.Hour).Err())
		for _, n := range []int{3, 600, 5000} {
			var vals []any
			for i := 0; i < n; i++ {
				vals = append(vals, fmt.Sprint("v", i, strings.Repeat("y", i%30)))
			}
			must(c.RPush(ctx, fmt.Sprint("list", n), vals...).Err())
			must(c.SAdd(ctx, fmt.Sprint("set", n), vals...).Err())
			var ints []any
			var pairs []any
			var zs []redis.Z
			for i := 0; i < n; i++ {
				ints = append(ints, i*7-100)
				pairs = append(pairs, fmt.Sprint("f", i), vals[i])
				zs = append(zs, redis.Z{Member: vals[i], Score: float64(i) * 1.5})
			}
			must(c.SAdd(ctx, fmt.Sprint("intset", n), ints...).Err())
			must(c.HSet(ctx, fmt.Sprint("hash", n), pairs...).Err())
			must(c.ZAdd(ctx, fmt.Sprint("zset", n), zs...).Err())
			must(c.PExpire(ctx, fmt.Sprint("zset", n), time.Hour).Err())
		}
	}
	must(c.Save(ctx).Err())
	want := redisContents(t, rc)
	f, err := os.Open(filepath.Join(dir, "dump.rdb"))
	must(err)
	defer f.Close()
	st := shard.NewStore(3, 16)
	stats, err := Load(st, f, "dump.rdb")
	must(err)
	if stats.Keys != int64(len(want)) {
		t.Errorf("Stats.Keys = %d, want %d", stats.Keys, len(want))
	}
	compareContents(t, want, contents(st, time.Now().UnixMilli(), true))
}

// TestRedisStreamRefused: a Redis dump with a stream (which Damselfly cannot
// hold) is refused with the key's name rather than loaded partially.
func TestRedisStreamRefused(t *testing.T) {
	f, err := os.Open("../testdata/redis-7.0-all-types.rdb")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	st := shard.NewStore(2, 16)
	_, err = Load(st, f, "redis-7.0-all-types.rdb")
	if err == nil || !strings.Contains(err.Error(), "stream") || !strings.Contains(err.Error(), "redis-7.0-all-types.rdb") {
		t.Fatalf("err = %v", err)
	}
	if n := len(contents(st, 0, true)); n != 0 {
		t.Fatalf("%d keys kept after a failed load", n)
	}
}
