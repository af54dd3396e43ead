package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/damselflydb/damselfly/internal/redistest"
	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH: skipping the Redis interop test", tool)
		}
	}
}

// startRedis runs redis-server on dir/dump.rdb and returns a client.
func startRedis(t *testing.T, dir string) *redis.Client {
	t.Helper()
	logf := filepath.Join(dir, "redis.log")
	rs := redistest.Start(t, "", "--dir", dir,
		"--dbfilename", "dump.rdb", "--save", "", "--appendonly", "no", "--logfile", logf)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr, PoolSize: 4, Protocol: 2})
	t.Cleanup(func() { rc.Close() })
	return rc
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
				b.WriteString(canonBytes(c.Get(ctx, k).Val()))
			case "list":
				for _, v := range c.LRange(ctx, k, 0, -1).Val() {
					b.WriteString(canonBytes(v) + ",")
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
			case "stream":
				redisStream(t, &b, c, k)
			default:
				t.Fatalf("unexpected type %s of %s", typ, k)
			}
			out[fmt.Sprintf("%d %s", db, k)] = b.String()
		}
		c.Close()
	}
	return out
}

// redisStream renders a stream of a redis-server like canonStream, from
// XINFO STREAM FULL (raw replies: go-redis's maps lose field order).
func redisStream(t *testing.T, b *strings.Builder, c *redis.Conn, k string) {
	t.Helper()
	ctx := context.Background()
	raw, err := c.Do(ctx, "XINFO", "STREAM", k, "FULL", "COUNT", 0).Slice()
	if err != nil {
		t.Fatal(err)
	}
	m := func(x any) map[string]any {
		l := x.([]any)
		out := map[string]any{}
		for i := 0; i+1 < len(l); i += 2 {
			out[l[i].(string)] = l[i+1]
		}
		return out
	}
	info := m(raw)
	fmt.Fprintf(b, "len=%d last=%s first=%s maxdel=%s added=%d entries=", info["length"], info["last-generated-id"],
		info["recorded-first-entry-id"], info["max-deleted-entry-id"], info["entries-added"])
	for _, e := range info["entries"].([]any) {
		ent := e.([]any)
		fmt.Fprintf(b, "%s{", ent[0])
		fv := ent[1].([]any)
		for i := 0; i < len(fv); i += 2 {
			fmt.Fprintf(b, "%q=%q,", fv[i], fv[i+1])
		}
		b.WriteString("}")
	}
	for _, gx := range info["groups"].([]any) {
		g := m(gx)
		read := int64(-1)
		if g["entries-read"] != nil {
			read = g["entries-read"].(int64)
		}
		fmt.Fprintf(b, " group %q last=%s read=%d pel=", g["name"], g["last-delivered-id"], read)
		for _, px := range g["pending"].([]any) {
			p := px.([]any)
			fmt.Fprintf(b, "[%s %q %d %d]", p[0], p[1], p[3], p[2])
		}
		for _, cx := range g["consumers"].([]any) {
			cm := m(cx)
			fmt.Fprintf(b, " consumer %q seen=%d pel=", cm["name"], cm["seen-time"])
			for _, px := range cm["pending"].([]any) {
				fmt.Fprintf(b, "%s,", px.([]any)[0])
			}
		}
	}
}

// TestDumpLoadsInRedis: our dump passes redis-check-rdb and redis-server
// loads it with the same contents.
func TestDumpLoadsInRedis(t *testing.T) {
	needTools(t, "redis-server", "redis-check-rdb")
	st := shard.NewStore(3, 16)
	fillAllTypes(st, time.Now().Add(time.Hour).UnixMilli())
	want := contents(st, time.Now().UnixMilli(), true)
	data, _ := save(t, st, Options{})
	compareContents(t, want, redisContents(t, startRedis(t, checkedDumpDir(t, data))))
}

// checkedDumpDir writes data as dump.rdb in a new directory, checks it
// with redis-check-rdb and returns the directory, for redis-server to
// load it.
func checkedDumpDir(t *testing.T, data []byte) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "dump.rdb")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("redis-check-rdb", path).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("RDB looks OK")) {
		t.Fatalf("redis-check-rdb: %v\n%s", err, out)
	}
	return dir
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

// TestRedisStreamLoads: the stream of the Redis 7.0 all-types dump (two
// nodes' worth of entries with different field sets, a consumer group)
// loads with its entries and metadata.
func TestRedisStreamLoads(t *testing.T) {
	f, err := os.Open("../testdata/redis-7.0-all-types.rdb")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	st := shard.NewStore(2, 16)
	if _, err := Load(st, f, "redis-7.0-all-types.rdb"); err != nil {
		t.Fatal(err)
	}
	got := contents(st, time.Now().UnixMilli(), true)["3 db3:stream"]
	want := `stream@0:len=2 last=2-1 first=1-1 maxdel=0-0 added=2 entries=1-1{"field1"="value1","field2"="value2",}2-1{"field1"="value3",} group "group1" last=0-0 read=-1 pel=`
	if got != want {
		t.Fatalf("db3:stream\n got  %s\n want %s", got, want)
	}
}

// fillRedisStreams builds streams on a redis-server with every feature the
// RDB format carries: several nodes, changing field sets, integers, long
// values, tombstones, trimming, groups with PELs and consumers (claimed,
// acknowledged, idle), an empty stream with a group, a TTL.
func fillRedisStreams(t *testing.T, c *redis.Conn) {
	t.Helper()
	ctx := context.Background()
	do := func(args ...any) {
		t.Helper()
		if err := c.Do(ctx, args...).Err(); err != nil && err != redis.Nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	for i := 0; i < 700; i++ {
		switch i % 5 {
		case 0, 1, 2:
			do("XADD", "big", fmt.Sprintf("%d-%d", 1000+i/2, i%2), "temp", i*13-400, "hum", "x")
		case 3:
			do("XADD", "big", fmt.Sprintf("%d-%d", 1000+i/2, i%2), "note", strings.Repeat("n", 80+i), "note", "again")
		case 4:
			do("XADD", "big", fmt.Sprintf("%d-%d", 1000+i/2, i%2), "k", strings.Repeat("z", i%70))
		}
	}
	for i := 0; i < 700; i += 9 {
		do("XDEL", "big", fmt.Sprintf("%d-%d", 1000+i/2, i%2))
	}
	do("XGROUP", "CREATE", "big", "workers", "0")
	do("XGROUP", "CREATE", "big", "late", "$")
	do("XGROUP", "CREATECONSUMER", "big", "late", "nobody")
	do("XREADGROUP", "GROUP", "workers", "alice", "COUNT", "40", "STREAMS", "big", ">")
	do("XREADGROUP", "GROUP", "workers", "bob", "COUNT", "25", "STREAMS", "big", ">")
	do("XACK", "big", "workers", "1000-0", "1001-1", "1005-0")
	do("XCLAIM", "big", "workers", "carol", "0", "1002-0", "1003-1")
	do("XADD", "trimmed", "MAXLEN", "5", "*", "a", "1")
	for i := 0; i < 300; i++ {
		do("XADD", "trimmed", "MAXLEN", "250", "*", "a", i)
	}
	do("XGROUP", "CREATE", "empty", "g", "$", "MKSTREAM")
	do("XADD", "gone", "1-1", "f", "v")
	do("XDEL", "gone", "1-1")
	do("XADD", "ttl", "*", "f", "v")
	do("PEXPIRE", "ttl", 3600000)
}

// TestRedisStreamsBothWays: streams written by redis-server load into
// Damselfly identically; Damselfly's dump of them passes redis-check-rdb and
// loads into redis-server identically; DUMP payloads go both ways.
func TestRedisStreamsBothWays(t *testing.T) {
	needTools(t, "redis-server", "redis-check-rdb")
	ctx := context.Background()
	dir := t.TempDir()
	rc := startRedis(t, dir)
	c := rc.Conn()
	defer c.Close()
	fillRedisStreams(t, c)
	if err := c.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	want := redisContents(t, rc)
	data, err := os.ReadFile(filepath.Join(dir, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	st := load(t, data, 3)
	compareContents(t, want, contents(st, time.Now().UnixMilli(), true))

	// DUMP payloads: Redis's restore here, ours restore in Redis.
	for _, k := range []string{"big", "trimmed", "empty", "gone"} {
		p, err := c.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		sh, h := st.ShardOf([]byte(k))
		sh.Lock()
		e, _ := sh.DB(0).Find(h, []byte(k))
		ours, err := Dump(&e)
		sh.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.RestoreReplace(ctx, k+":ours", 0, string(ours)).Err(); err != nil {
			t.Fatalf("RESTORE of our %s payload: %v", k, err)
		}
		re, err := rdb.Restore([]byte(p))
		if err != nil {
			t.Fatalf("restoring Redis's %s payload: %v", k, err)
		}
		v, err := Value(re)
		if err != nil {
			t.Fatal(err)
		}
		var b1, b2 strings.Builder
		canonStream(&b1, v.Obj.(*types.Stream))
		canonStream(&b2, e.Obj().(*types.Stream))
		if b1.String() != b2.String() {
			t.Fatalf("%s: restored %s\nwant %s", k, b1.String(), b2.String())
		}
	}
	var b1, b2 strings.Builder
	redisStream(t, &b1, c, "big")
	redisStream(t, &b2, c, "big:ours")
	if b1.String() != b2.String() {
		t.Fatalf("big restored in Redis from our payload:\n%s\nwant\n%s", b2.String(), b1.String())
	}

	// Our dump, in Redis.
	ours, _ := save(t, st, Options{})
	compareContents(t, want, redisContents(t, startRedis(t, checkedDumpDir(t, ours))))
}

// bigValues returns the big strings of the big-value interop tests: 1, 3
// and 10 MB, random (LZF gives up on them, so they are written raw) and
// repetitive (LZF shrinks them), so the CRC runs over long raw runs and
// over compressed ones. Under -race the 10 MB pair is left out: the race
// detector's cost grows with every byte copied, the 1 and 3 MB values
// take the same paths (far above bigObj, several chunks), and the plain
// pass runs all three.
func bigValueSizes() []int {
	if raceEnabled {
		return []int{1 << 20, 3<<20 + 7}
	}
	return []int{1 << 20, 3<<20 + 7, 10 << 20}
}

func bigValues() map[string][]byte {
	// ChaCha8 fills whole slices at once: a loop storing byte by byte is
	// instrumented per byte under -race.
	rng := rand.NewChaCha8([32]byte{11, 12})
	out := map[string][]byte{}
	for _, n := range bigValueSizes() {
		r := make([]byte, n)
		rng.Read(r)
		out[fmt.Sprint("rand", n)] = r
		out[fmt.Sprint("rep", n)] = bytes.Repeat([]byte(fmt.Sprint("pattern", n, "|")), n/12)
	}
	return out
}

// TestBigValuesInRedis: dumps with 1-10 MB strings among small keys, LZF
// off and on, pass redis-check-rdb and load into redis-server with the same
// contents (the trailer CRC64 is the folded one on amd64).
func TestBigValuesInRedis(t *testing.T) {
	needTools(t, "redis-server", "redis-check-rdb")
	st := shard.NewStore(3, 16)
	for k, v := range bigValues() {
		put(st, 0, k, shard.Value{Type: shard.TypeString, Str: v})
	}
	for i := 0; i < 1000; i++ {
		put(st, i%3, fmt.Sprint("small", i), shard.Value{Type: shard.TypeString, Str: []byte(strings.Repeat("v", i%100))})
	}
	// Values our LZF compressor meets in every shape: runs, repeats at
	// near and far distances, random spans, text, long and short.
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 2000; i++ {
		v := make([]byte, 0, 20000)
		for n := 21 + rng.IntN([]int{100, 1000, 20000}[i%3]); len(v) < n; {
			switch run := 1 + rng.IntN(300); rng.IntN(4) {
			case 0:
				if len(v) > 0 {
					from := rng.IntN(len(v))
					v = append(v, v[from:min(len(v), from+run)]...)
				}
			case 1:
				v = append(v, bytes.Repeat([]byte{byte(rng.IntN(3))}, run)...)
			case 2:
				v = append(v, strings.Repeat("lorem ipsum ", run/12+1)...)
			default:
				for k := 0; k < run; k++ {
					v = append(v, byte(rng.Uint32()))
				}
			}
		}
		put(st, i%3, fmt.Sprint("mixed", i), shard.Value{Type: shard.TypeString, Str: v})
	}
	want := contents(st, time.Now().UnixMilli(), true)
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprint("lzf=", compress), func(t *testing.T) {
			data, _ := save(t, st, Options{Compress: compress})
			compareContents(t, want, redisContents(t, startRedis(t, checkedDumpDir(t, data))))
		})
	}
}

// TestRedisBigValuesLoad: a dump redis-server writes with 1-10 MB strings
// (rdbcompression off and on) loads into Damselfly, which verifies the
// CRC64; the same file with one byte of a big value flipped is refused.
func TestRedisBigValuesLoad(t *testing.T) {
	needTools(t, "redis-server")
	for _, compress := range []string{"no", "yes"} {
		t.Run("rdbcompression="+compress, func(t *testing.T) {
			dir := t.TempDir()
			rc := startRedis(t, dir)
			ctx := context.Background()
			if err := rc.ConfigSet(ctx, "rdbcompression", compress).Err(); err != nil {
				t.Fatal(err)
			}
			for k, v := range bigValues() {
				if err := rc.Set(ctx, k, v, 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 1000; i++ {
				if err := rc.Set(ctx, fmt.Sprint("small", i), strings.Repeat("v", i%100), 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if err := rc.Save(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			want := redisContents(t, rc)
			data, err := os.ReadFile(filepath.Join(dir, "dump.rdb"))
			if err != nil {
				t.Fatal(err)
			}
			compareContents(t, want, contents(load(t, data, 3), time.Now().UnixMilli(), true))

			// Flip a byte in the middle of the biggest random value: the
			// record still parses, so only the checksum can catch it.
			sizes := bigValueSizes()
			n := sizes[len(sizes)-1]
			i := bytes.Index(data, []byte(fmt.Sprint("rand", n)))
			if i < 0 {
				t.Fatal("big key not found in the dump")
			}
			bad := slices.Clone(data)
			bad[i+n/2] ^= 0x40
			if _, err := Load(shard.NewStore(3, 16), bytes.NewReader(bad), "bad.rdb"); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
				t.Fatalf("corrupted dump: err = %v, want a checksum mismatch", err)
			}
		})
	}
}
