package types

import (
	"bytes"
	"testing"
)

func TestListpackRoundTrip(t *testing.T) {
	vals := [][]byte{{}, []byte("a"), bytes.Repeat([]byte("x"), 127), bytes.Repeat([]byte("y"), 128), bytes.Repeat([]byte("z"), 20000)}
	b := EncodeListpack(vals)
	got, err := DecodeListpack(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(vals) {
		t.Fatalf("len %d", len(got))
	}
	for i := range vals {
		if !bytes.Equal(got[i], vals[i]) {
			t.Fatalf("entry %d differs", i)
		}
	}
	// backwards walk
	i := len(vals) - 1
	for end := len(b); end > 0; i-- {
		var v []byte
		v, end = lpPrev(b, end)
		if !bytes.Equal(v, vals[i]) {
			t.Fatalf("prev entry %d differs", i)
		}
	}
	// replace / insert / delete
	_, e0 := lpNext(b, 0)
	b = lpReplace(b, 0, e0, []byte("hello"))
	b = lpInsert(b, 0, []byte("first"))
	got, err = DecodeListpack(b)
	if err != nil || string(got[0]) != "first" || string(got[1]) != "hello" || len(got) != 6 {
		t.Fatalf("after edits: %q %v", got, err)
	}
	for _, bad := range [][]byte{{0x05, 'a'}, {0x80}, {0x01, 'a', 0x02}, {0x81, 0x00, 0x00, 0x81}} {
		if _, err := DecodeListpack(bad); err == nil {
			t.Fatalf("accepted %x", bad)
		}
	}
}

func TestParseStrictInt(t *testing.T) {
	good := map[string]int64{"0": 0, "-1": -1, "9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63, "12": 12}
	for s, v := range good {
		got, ok := parseStrictInt([]byte(s))
		if !ok || got != v {
			t.Fatalf("%q: %v %v", s, got, ok)
		}
	}
	for _, s := range []string{"", "-", "01", "+1", "-0", "9223372036854775808", "-9223372036854775809", "1a", " 1", "99999999999999999999"} {
		if _, ok := parseStrictInt([]byte(s)); ok {
			t.Fatalf("%q accepted", s)
		}
	}
}

func TestRedisLPEntrySize(t *testing.T) {
	cases := map[string]int{"1": 2, "127": 2, "128": 3, "-4096": 3, "32767": 4, "8388607": 5, "2147483647": 6, "9223372036854775807": 10, "": 2, "abc": 5}
	for s, n := range cases {
		if got := redisLPEntrySize([]byte(s)); got != n {
			t.Fatalf("%q: %d want %d", s, got, n)
		}
	}
	if got := redisLPEntrySize(bytes.Repeat([]byte("a"), 100)); got != 103 {
		t.Fatal(got)
	}
	if got := redisLPEntrySize(bytes.Repeat([]byte("a"), 200)); got != 204 {
		t.Fatal(got)
	}
}

func FuzzListpack(f *testing.F) {
	f.Add([]byte{})
	f.Add(EncodeListpack([][]byte{[]byte("a"), []byte("bc"), bytes.Repeat([]byte("x"), 300)}))
	f.Add([]byte{0x81, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		// arbitrary bytes: decoding never panics; valid input re-encodes identically
		if vals, err := DecodeListpack(data); err == nil {
			if !bytes.Equal(EncodeListpack(vals), data) {
				t.Fatalf("re-encode differs")
			}
		}
		// split data into values: decode(encode(x)) == x
		var vals [][]byte
		for i := 0; i < len(data); {
			n := int(data[i]) % 7
			i++
			end := min(i+n, len(data))
			vals = append(vals, data[i:end])
			i = end
		}
		enc := EncodeListpack(vals)
		got, err := DecodeListpack(enc)
		if err != nil || len(got) != len(vals) {
			t.Fatalf("round trip: %v", err)
		}
		for i := range vals {
			if !bytes.Equal(got[i], vals[i]) {
				t.Fatalf("value %d differs", i)
			}
		}
		for i, end := len(vals)-1, len(enc); end > 0; i-- {
			var v []byte
			v, end = lpPrev(enc, end)
			if !bytes.Equal(v, vals[i]) {
				t.Fatalf("backward value %d differs", i)
			}
		}
	})
}
