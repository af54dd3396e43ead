package rdb

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func expected(items []item) map[string]string {
	m := map[string]string{}
	for _, it := range items {
		m[fmt.Sprintf("%d/%s", it.db, it.key)] = it.canon()
	}
	return m
}

func compare(t *testing.T, want, got map[string]string) {
	t.Helper()
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("%s: missing", k)
		} else if g != w {
			t.Errorf("%s:\n got %.300s\nwant %.300s", k, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected key", k)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, v := range []int{10, 11, 12} {
		t.Run(fmt.Sprintf("RDB%d", v), func(t *testing.T) {
			items := dataset(v)
			data := writeDataset(t, items, v)
			got, info := loadAll(t, data, "ours.rdb")
			compare(t, expected(items), got)
			if info.Version != v || !info.ChecksumVerified || info.Keys != int64(len(items)) || info.Expired != 1 {
				t.Errorf("info = %+v", info)
			}
			if info.Aux["redis-ver"] != RedisVersion || info.Aux["redis-bits"] != "64" {
				t.Errorf("aux = %v", info.Aux)
			}
			if len(info.Warnings) != 0 {
				t.Errorf("warnings: %v", info.Warnings)
			}
		})
	}
}

// TestListStreaming checks both list paths with default limits: a list
// that fits the node buffer and one that is streamed in fixed-count nodes.
func TestListStreaming(t *testing.T) {
	const n = 300_000
	elems := func(yield func([]byte) bool) {
		var b []byte
		for i := range n {
			b = strconv.AppendInt(b[:0], int64(i), 10)
			if i%3 == 0 {
				b = append(b, "-some-text"...)
			}
			if !yield(b) { // the writer must not keep b
				return
			}
		}
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, 0)
	w.Header(nil)
	w.SelectDB(0, 1, 0)
	if err := w.List([]byte("big"), 0, n, elems); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := Load(bytes.NewReader(buf.Bytes()), "big.rdb", func(e *Entry) error {
		if len(e.List) != n {
			return fmt.Errorf("len %d", len(e.List))
		}
		i := 0
		for v := range elems {
			if !bytes.Equal(e.List[i], v) {
				return fmt.Errorf("elem %d = %q want %q", i, e.List[i], v)
			}
			i++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestWriterCountMismatch(t *testing.T) {
	for _, n := range []int{1, 3, 200, 2000} {
		w := NewWriter(&bytes.Buffer{}, 0)
		w.Header(nil)
		elems := slices.Values(bs("a", "b"))
		if err := w.List([]byte("k"), 0, n, elems); err == nil && n != 2 {
			t.Errorf("list n=%d: no error", n)
		}
		w = NewWriter(&bytes.Buffer{}, 0)
		if err := w.Set([]byte("k"), 0, n, elems); err == nil {
			t.Errorf("set n=%d: no error", n)
		}
		w = NewWriter(&bytes.Buffer{}, 0)
		if err := w.Hash([]byte("k"), 0, n, pairs([][2][]byte{{[]byte("f"), []byte("v")}, {[]byte("g"), []byte("v")}})); err == nil {
			t.Errorf("hash n=%d: no error", n)
		}
	}
	if err := NewWriter(&bytes.Buffer{}, 9).Header(nil); err == nil {
		t.Error("version 9 accepted")
	}
	w := NewWriter(&bytes.Buffer{}, 0)
	if err := w.ZSet([]byte("k"), 0, 1, zpairs([]ZMember{{[]byte("m"), math.NaN()}})); err == nil {
		t.Error("NaN score accepted")
	}
}

// replay builds the expected contents from a commands file written by
// testdata/make-dumps.sh.
func replay(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type val struct {
		item
		stream int
		hft    map[string]int64
	}
	db := 0
	keys := map[string]*val{}
	var order []string
	get := func(k string, typ Type) *val {
		id := fmt.Sprintf("%d/%s", db, k)
		v := keys[id]
		if v == nil {
			v = &val{item: item{db: db, key: k, typ: typ}}
			keys[id] = v
			order = append(order, id)
		}
		return v
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		a := strings.Fields(sc.Text())
		if len(a) == 0 {
			continue
		}
		switch strings.ToUpper(a[0]) {
		case "SELECT":
			db, _ = strconv.Atoi(a[1])
		case "SET":
			get(a[1], String).str = []byte(a[2])
		case "RPUSH":
			v := get(a[1], List)
			v.list = append(v.list, bs(a[2:]...)...)
		case "SADD":
			v := get(a[1], Set)
			for _, m := range a[2:] {
				if !slices.ContainsFunc(v.set, func(b []byte) bool { return string(b) == m }) {
					v.set = append(v.set, []byte(m))
				}
			}
		case "HSET":
			v := get(a[1], Hash)
			for i := 2; i+1 < len(a); i += 2 {
				v.hash = append(v.hash, [2][]byte{[]byte(a[i]), []byte(a[i+1])})
			}
		case "ZADD":
			v := get(a[1], ZSet)
			for i := 2; i+1 < len(a); i += 2 {
				s, err := strconv.ParseFloat(a[i], 64)
				if err != nil {
					t.Fatal(err)
				}
				v.zset = append(v.zset, ZMember{[]byte(a[i+1]), s})
			}
		case "PEXPIREAT":
			get(a[1], 0).exp, _ = strconv.ParseInt(a[2], 10, 64)
		case "XADD":
			get(a[1], Stream).stream++
		case "HPEXPIREAT": // key ms FIELDS n field...
			v := get(a[1], Hash)
			at, _ := strconv.ParseInt(a[2], 10, 64)
			if v.hft == nil {
				v.hft = map[string]int64{}
			}
			for _, f := range a[5:] {
				v.hft[f] = at
			}
		case "FUNCTION": // checked by the caller (Info.Functions)
		case "XGROUP":
		default:
			t.Fatalf("replay: unknown command %q", a[0])
		}
	}
	m := map[string]string{}
	for _, id := range order {
		v := keys[id]
		if v.typ == Stream {
			m[id] = fmt.Sprintf("stream@%d:%d", v.exp, v.stream)
		} else {
			m[id] = v.canon() + ttlSuffix(v.hft)
		}
	}
	return m
}

func TestLoadRedisDump(t *testing.T) {
	data, err := os.ReadFile("../../testdata/redis-7.0-all-types.rdb")
	if err != nil {
		t.Fatal(err)
	}
	got, info := loadAll(t, data, "redis-7.0-all-types.rdb")
	compare(t, replay(t, "../../testdata/redis-7.0-all-types.commands"), got)
	if info.Version != 10 || !info.ChecksumVerified || info.Aux["redis-ver"] != "7.0.15" {
		t.Errorf("info = %+v", info)
	}
}

// TestLoadLivingDumps loads the dumps of every living Redis and Valkey that
// testdata/make-dumps.sh produced (RDB 11 and 12: listpack sets, hashes
// with field TTLs in both encodings, function libraries, new aux fields)
// and compares each key with what the commands built.
func TestLoadLivingDumps(t *testing.T) {
	for _, d := range []struct {
		name    string
		version int
		verAux  string // aux field naming the server's version
		ver     string
		funcs   int
	}{
		{"redis-7.2", 11, "redis-ver", "7.2.6", 1},
		{"redis-7.4", 12, "redis-ver", "7.4.1", 1},
		{"redis-8.0", 12, "redis-ver", "7.9.224", 1}, // 8.0-m01 calls itself 7.9.224
		{"valkey-8.0", 11, "valkey-ver", "8.0.1", 1},
	} {
		t.Run(d.name, func(t *testing.T) {
			base := "../../testdata/" + d.name + "-all-types"
			data, err := os.ReadFile(base + ".rdb")
			if err != nil {
				t.Fatal(err)
			}
			got, info := loadAll(t, data, d.name+".rdb")
			compare(t, replay(t, base+".commands"), got)
			if info.Version != d.version || !info.ChecksumVerified || info.Aux[d.verAux] != d.ver {
				t.Errorf("version %d, checksum verified %v, aux %v", info.Version, info.ChecksumVerified, info.Aux)
			}
			if len(info.Functions) != d.funcs || d.funcs > 0 && !strings.Contains(info.Functions[0], "name=dumplib") {
				t.Errorf("functions = %q", info.Functions)
			}
		})
	}
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRedisInterop: our RDB 10 file passes redis-check-rdb and loads into
// redis-server 7.0 with the same contents, TTLs and encodings.
func TestRedisInterop(t *testing.T) {
	needRedis(t, "redis-server", "redis-check-rdb")
	items := dataset(10)
	data := writeDataset(t, items, 10)
	dir := t.TempDir()
	p := writeFile(t, dir, "ours.rdb", data)
	out, err := exec.Command("redis-check-rdb", p).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("RDB looks OK")) {
		t.Fatalf("redis-check-rdb: %v\n%s", err, out)
	}
	srv := startRedis(t, dir, "ours.rdb")
	c := srv.conn(t)
	now := time.Now().UnixMilli()
	var live [2]int64
	for _, it := range items {
		c.must(t, "SELECT", it.db)
		if it.exp > 0 && it.exp <= now {
			if n := c.must(t, "EXISTS", it.key).(int64); n != 0 {
				t.Errorf("%s: expired key loaded", it.key)
			}
			continue
		}
		live[min(it.db, 1)]++
		got, enc := redisCanon(t, c, it.key)
		if want := it.canon(); got != want {
			t.Errorf("%d/%s:\n got %.300s\nwant %.300s", it.db, it.key, got, want)
		}
		if it.enc != "" && enc != it.enc {
			t.Errorf("%s: OBJECT ENCODING %s, want %s", it.key, enc, it.enc)
		}
	}
	c.must(t, "SELECT", 0)
	if n := c.must(t, "DBSIZE").(int64); n != live[0] {
		t.Errorf("db0 DBSIZE %d want %d", n, live[0])
	}

	t.Run("DUMP", func(t *testing.T) {
		for _, it := range items {
			if it.exp > 0 && it.exp <= now {
				continue
			}
			c.must(t, "SELECT", it.db)
			// Redis's payload -> our Restore.
			p, ok := c.must(t, "DUMP", it.key).(string)
			if !ok {
				t.Fatalf("DUMP %s: no payload", it.key)
			}
			if v := binary.LittleEndian.Uint16([]byte(p[len(p)-10:])); v != 10 {
				t.Errorf("Redis DUMP version %d", v)
			}
			e, err := Restore([]byte(p))
			if err != nil {
				t.Fatalf("Restore(%s): %v", it.key, err)
			}
			noTTL := it
			noTTL.exp = 0
			if got, want := entryCanon(e), noTTL.canon(); got != want {
				t.Errorf("Restore %s:\n got %.300s\nwant %.300s", it.key, got, want)
			}
			// Our payload -> Redis RESTORE.
			ours, err := dumpItem(it)
			if err != nil {
				t.Fatal(err)
			}
			copyKey := "copy:" + it.key
			if _, err := c.do("RESTORE", copyKey, 0, ours, "REPLACE"); err != nil {
				t.Fatalf("RESTORE %s: %v", it.key, err)
			}
			got, enc := redisCanon(t, c, copyKey)
			if want := noTTL.canon(); got != want {
				t.Errorf("RESTORE %s:\n got %.300s\nwant %.300s", it.key, got, want)
			}
			if it.enc != "" && enc != it.enc {
				t.Errorf("RESTORE %s: OBJECT ENCODING %s, want %s", it.key, enc, it.enc)
			}
		}
		// Redis refuses a corrupted payload of ours with the same text we use.
		bad := DumpString([]byte("x"))
		bad[0] ^= 1
		_, err := c.do("RESTORE", "bad", 0, bad)
		if err == nil || err.Error() != "ERR "+ErrDumpPayload.Error() {
			t.Errorf("redis RESTORE bad payload: %v", err)
		}
		if _, err := Restore(bad); err == nil || err.Error() != "DUMP payload version or checksum are wrong" {
			t.Errorf("Restore bad payload: %v", err)
		}
	})

	t.Run("RedisSavesOurData", func(t *testing.T) {
		// Redis re-saves what it loaded from us; we read its file back.
		c.must(t, "SAVE")
		saved, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := loadAll(t, saved, "resaved.rdb")
		for _, it := range items {
			if it.exp > 0 && it.exp <= now {
				continue
			}
			id := fmt.Sprintf("%d/%s", it.db, it.key)
			if got[id] != it.canon() {
				t.Errorf("%s after Redis SAVE:\n got %.300s\nwant %.300s", id, got[id], it.canon())
			}
		}
	})
}

func dumpItem(it item) ([]byte, error) {
	d := Dumper{Limits: testLimits}
	switch it.typ {
	case String:
		return d.String(it.str)
	case List:
		return d.List(len(it.list), slices.Values(it.list))
	case Set:
		return d.Set(len(it.set), slices.Values(it.set))
	case Hash:
		return d.Hash(len(it.hash), pairs(it.hash))
	case ZSet:
		return d.ZSet(len(it.zset), zpairs(it.zset))
	}
	return nil, errors.New("type")
}

func TestDumpRestore(t *testing.T) {
	for _, it := range dataset(10) {
		p, err := dumpItem(it)
		if err != nil {
			t.Fatal(err)
		}
		e, err := Restore(p)
		if err != nil {
			t.Fatalf("%s: %v", it.key, err)
		}
		it.exp = 0
		if got, want := entryCanon(e), it.canon(); got != want {
			t.Errorf("%s:\n got %.200s\nwant %.200s", it.key, got, want)
		}
		for _, bad := range [][]byte{p[:len(p)-1], append(slices.Clone(p[:len(p)-10]), 13, 0), nil} {
			if _, err := Restore(bad); err != ErrDumpPayload {
				t.Errorf("%s: bad payload: %v", it.key, err)
			}
		}
	}
	// A well-formed footer over a broken value.
	body := []byte{typeList, 5, 0}
	p := binary.LittleEndian.AppendUint16(body, 10)
	p = binary.LittleEndian.AppendUint64(p, crc64(p))
	if _, err := Restore(p); err != ErrBadDataFormat {
		t.Errorf("broken value: %v", err)
	}
}

// moduleFile writes a file with a module value (with a TTL) between two keys.
func moduleFile(t *testing.T) []byte {
	var buf bytes.Buffer
	w := NewWriter(&buf, 0)
	w.Header(nil)
	w.SelectDB(0, 3, 1)
	w.String([]byte("before"), []byte("1"), 0)
	w.begin(typeModule2, []byte("modkey"), 4102444800000)
	id := uint64(12345) << 10
	w.writeLength(id)
	w.writeLength(2) // UINT
	w.writeLength(77)
	w.writeLength(5) // STRING
	w.writeString([]byte("module payload"))
	w.writeLength(4) // DOUBLE
	w.writeDouble(1.5)
	w.writeLength(0) // EOF
	w.String([]byte("after"), []byte("2"), 0)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestModuleSkipped(t *testing.T) {
	got, info := loadAll(t, moduleFile(t), "mod.rdb")
	want := map[string]string{
		"0/before": canon(String, 0, []byte("1"), nil, nil, nil, nil),
		"0/after":  canon(String, 0, []byte("2"), nil, nil, nil, nil),
	}
	compare(t, want, got)
	if len(info.Warnings) != 1 || !strings.Contains(info.Warnings[0], `"modkey"`) {
		t.Errorf("warnings = %q", info.Warnings)
	}
}

func checkLoadError(t *testing.T, data []byte, what string) {
	t.Helper()
	_, err := Load(bytes.NewReader(data), "x.rdb", func(*Entry) error { return nil })
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	var fe *Error
	if !errors.As(err, &fe) || fe.File != "x.rdb" || !strings.HasPrefix(err.Error(), "x.rdb: ") {
		t.Fatalf("%s: error %q (%T) does not name the file", what, err, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "offset ") && !strings.Contains(msg, "checksum mismatch") {
		t.Fatalf("%s: error %q names neither offset nor checksum", what, msg)
	}
	if strings.Contains(msg, "internal error") {
		t.Fatalf("%s: %s", what, msg)
	}
}

func TestCorruption(t *testing.T) {
	redisDump, err := os.ReadFile("../../testdata/redis-7.0-all-types.rdb")
	if err != nil {
		t.Fatal(err)
	}
	small := dataset(11)
	small = slices.DeleteFunc(small, func(it item) bool { return it.key == "l:big" || it.key == "s:big" })
	files := map[string][]byte{
		"ours":   writeDataset(t, small, 11),
		"redis":  redisDump,
		"module": moduleFile(t),
	}
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			step := max(1, len(data)/400)
			for n := 0; n < len(data); n += step {
				checkLoadError(t, data[:n], fmt.Sprintf("truncated at %d", n))
			}
			for n := len(data) - 12; n < len(data); n++ {
				checkLoadError(t, data[:n], fmt.Sprintf("truncated at %d", n))
			}
			for i := 0; i < len(data); i += step {
				for _, x := range []byte{0xff, 0x01, 0x80} {
					c := slices.Clone(data)
					c[i] ^= x
					checkLoadError(t, c, fmt.Sprintf("byte %d ^ %#x", i, x))
				}
			}
		})
	}
	// Specific messages.
	data := files["ours"]
	_, err = Load(bytes.NewReader(data[:len(data)-3]), "dump.rdb", func(*Entry) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "dump.rdb: offset ") || !strings.Contains(err.Error(), "truncated checksum (want 8 bytes, have 5)") {
		t.Errorf("truncated checksum: %v", err)
	}
	c := slices.Clone(data)
	c[len(c)-1] ^= 1
	_, err = Load(bytes.NewReader(c), "dump.rdb", func(*Entry) error { return nil })
	if err == nil || !strings.HasPrefix(err.Error(), "dump.rdb: checksum mismatch (file says ") {
		t.Errorf("checksum: %v", err)
	}
	// Checksum 0 means "not computed".
	c = slices.Clone(data)
	clear(c[len(c)-8:])
	if _, info := loadAll(t, c, "nocrc.rdb"); info.ChecksumVerified || len(info.Warnings) != 1 {
		t.Errorf("checksum 0: %+v", info)
	}
	// fn's error is returned as is.
	stop := errors.New("stop")
	if _, err := Load(bytes.NewReader(data), "x", func(*Entry) error { return stop }); err != stop {
		t.Errorf("fn error: %v", err)
	}
}

func FuzzLoad(f *testing.F) {
	redisDump, err := os.ReadFile("../../testdata/redis-7.0-all-types.rdb")
	if err == nil {
		f.Add(redisDump)
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, 11)
	w.Header(nil)
	w.SelectDB(0, 6, 1)
	w.String([]byte("s"), []byte("12"), 123)
	w.List([]byte("l"), 0, 3, slices.Values(bs("a", "1", "b")))
	w.Set([]byte("i"), 0, 2, slices.Values(bs("1", "2")))
	w.Set([]byte("s"), 0, 2, slices.Values(bs("a", "b")))
	w.Hash([]byte("h"), 0, 1, pairs([][2][]byte{{[]byte("f"), []byte("v")}}))
	w.ZSet([]byte("z"), 0, 1, zpairs([]ZMember{{[]byte("m"), 1.5}}))
	w.Close()
	f.Add(buf.Bytes())
	// Strings for the skimmer's fast path: LZF, integers, expiries,
	// memcached flags, several databases.
	buf.Reset()
	w = NewWriter(&buf, 10)
	w.Header(nil)
	w.SelectDB(0, 4, 1)
	w.String([]byte("lzf"), append([]byte("value:1"), make([]byte, 60)...), 0)
	w.String([]byte("n"), []byte("-70000"), 4102444800000)
	w.MCFlags(77)
	w.String([]byte("mc"), []byte("x"), 0)
	w.SelectDB(2, 1, 0)
	w.String([]byte("12345"), []byte("7"), 0)
	w.Close()
	f.Add(buf.Bytes())
	f.Add([]byte("REDIS0010\xff\x00\x00\x00\x00\x00\x00\x00\x00"))
	// Records the skimmer decodes itself (collload.go): a plain list and a
	// ZSET_2 with integer and LZF strings.
	f.Add(rawDump(typeList, rawSpecial(rawStr([]byte{3}, "a"), 5, "literal")))
	f.Add(rawDump(typeZSet2, binary.LittleEndian.AppendUint64(rawSpecial([]byte{1}, 9, "x")[:3], 0x3ff8000000000000)))
	f.Add([]byte("REDIS0009\x00\x01k\xc3\x05\x40\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		defer func() {
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("slow input: %v", d)
			}
		}()
		got, err := loadList(data, Options{})
		if err != nil {
			var fe *Error
			if !errors.As(err, &fe) || strings.Contains(err.Error(), "internal error") {
				t.Fatalf("bad error: %v", err)
			}
		}
		// Reusing entries changes nothing; the skimmer's own string
		// decoding agrees with github.com/hdt3213/rdb's.
		reused, rerr := loadList(data, Options{Reuse: true})
		if (err == nil) != (rerr == nil) || !slices.Equal(got, reused) {
			t.Fatalf("Reuse: %v %q, without: %v %q", rerr, reused, err, got)
		}
		slow, serr := loadList(data, Options{slowStrings: true})
		switch {
		case err == nil && serr == nil:
			if !slices.Equal(got, slow) {
				t.Fatalf("strings decoded by the skimmer %q, by the library %q", got, slow)
			}
		case err == nil:
			t.Fatalf("the library's decoding failed (%v) where the skimmer's did not", serr)
		case serr == nil && !strings.Contains(err.Error(), "LZF"):
			// (The library accepts LZF data shorter than its stated length.)
			t.Fatalf("the skimmer's decoding failed (%v) where the library's did not", err)
		}
		_, _ = Restore(data)
	})
}

// loadList loads data and lists every entry passed to fn, in order.
func loadList(data []byte, opt Options) ([]string, error) {
	var out []string
	_, err := LoadWith(bytes.NewReader(data), "fuzz.rdb", opt, func(e *Entry) error {
		out = append(out, fmt.Sprintf("%d/%q/%d/%s", e.DB, e.Key, e.MCFlags, entryCanon(e)))
		return nil
	})
	return out, err
}

// TestLoadOptions: RESIZEDB hints reach Options.ResizeDB; strings of every
// encoding (plain, integer, LZF, with expiries, in several databases) load
// the same with and without Reuse and as the library decodes them.
func TestLoadOptions(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, 10)
	w.Header(nil)
	w.SelectDB(0, 5, 2)
	w.String([]byte("plain"), []byte("v"), 0)
	w.String([]byte("int"), []byte("-12345"), 0)
	w.String([]byte("12"), []byte("int key"), 0)
	w.String([]byte("lzf"), bytes.Repeat([]byte("abc"), 100), 4102444800000)
	w.String([]byte("old"), []byte("expired"), 1000)
	w.SelectDB(3, 1000, 0)
	w.String([]byte("db3"), []byte("x"), 0)
	w.List([]byte("list"), 0, 2, slices.Values(bs("a", "b")))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var sizes []string
	opt := Options{ResizeDB: func(db int, keys, expires uint64) { sizes = append(sizes, fmt.Sprint(db, keys, expires)) }}
	got, err := loadList(buf.Bytes(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sizes, []string{"0 5 2", "3 1000 0"}) {
		t.Errorf("ResizeDB calls %q", sizes)
	}
	want := []string{
		`0/"plain"/0/string@0:"v"`,
		`0/"int"/0/string@0:"-12345"`,
		`0/"12"/0/string@0:"int key"`,
		`0/"lzf"/0/string@4102444800000:"` + strings.Repeat("abc", 100) + `"`,
		`0/"old"/0/string@1000:"expired"`,
		`3/"db3"/0/string@0:"x"`,
		`3/"list"/0/list@0:"a","b",`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	for _, o := range []Options{{Reuse: true}, {slowStrings: true}} {
		if other, err := loadList(buf.Bytes(), o); err != nil || !slices.Equal(other, want) {
			t.Errorf("%+v: %v %q", o, err, other)
		}
	}
}
