package rdb

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// lpCase is a set of collections built from fuzz input: elements of every
// listpack encoding (7-bit to 64-bit integers, 6-, 12- and 32-bit string
// lengths, strings that look like integers but are not canonical) and the
// limits they are written under (small node sizes and packed thresholds
// give multi-node quicklists with PLAIN nodes; no compression or LZF).
type lpCase struct {
	elems  [][]byte
	scores []float64
	lim    Limits
}

func lpCaseFrom(data []byte) lpCase {
	var c lpCase
	if len(data) > 0 {
		c.lim.NoCompression = data[0]&1 != 0
		if data[0]&2 != 0 {
			c.lim.ListNodeBytes = 64 + int(data[0])
		}
		if data[0]&4 != 0 {
			c.lim.ListPackedThreshold = 100
		}
		data = data[1:]
	}
	specials := []string{"0", "-0", "007", "+1", "-1", "127", "128", "-4096", "4095", "4096", "-32768", "32767",
		"-8388608", "8388607", "-2147483648", "2147483647", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "1.5", "", " 1"}
	for len(data) >= 2 && len(c.elems) < 150 {
		k, v := data[0], data[1]
		data = data[2:]
		var e []byte
		switch k % 6 {
		case 0:
			e = []byte(specials[int(v)%len(specials)])
		case 1:
			e = strconv.AppendInt(nil, int64(int8(v))*int64(k), 10)
		case 2:
			e = strconv.AppendInt(nil, int64(binary.LittleEndian.Uint64(append(bytes.Repeat([]byte{v}, 7), k))), 10)
		case 3:
			e = bytes.Repeat([]byte{'a' + v%26}, int(v)%70)
		case 4:
			e = bytes.Repeat([]byte{v}, 4000+int(k)*10) // 12- and 32-bit lengths
		default:
			n := min(int(v)%20, len(data))
			e, data = append([]byte("s"), data[:n]...), data[n:]
		}
		c.elems = append(c.elems, e)
		s := float64(int8(v)) * float64(k) / 4
		switch v % 11 {
		case 0:
			s = math.Inf(1)
		case 1:
			s = math.Inf(-1)
		case 2:
			s = float64(int64(k)<<40 | int64(v))
		}
		c.scores = append(c.scores, s)
	}
	return c
}

// distinct returns the elements without repeats (first kept), in order.
func distinct(es [][]byte) [][]byte {
	seen := map[string]bool{}
	var out [][]byte
	for _, e := range es {
		if !seen[string(e)] {
			seen[string(e)] = true
			out = append(out, e)
		}
	}
	return out
}

// checkLPRoundTrip writes c's collections to a dump and a DUMP payload,
// loads both and checks they read back equal: a list in order, the others
// as sets (only listpack encodings keep the written order).
func checkLPRoundTrip(t *testing.T, c lpCase) {
	t.Helper()
	if len(c.elems) == 0 {
		return
	}
	members := distinct(c.elems)
	zs := make([]ZMember, len(members))
	for i, m := range members {
		zs[i] = ZMember{Member: m, Score: c.scores[i]}
	}
	hash := make([][2][]byte, len(members))
	for i, m := range members {
		hash[i] = [2][]byte{m, c.elems[len(c.elems)-1-i%len(c.elems)]}
	}
	want := map[string]*Entry{
		"l": {Type: List, List: c.elems},
		"s": {Type: Set, Set: members},
		"h": {Type: Hash, Hash: hash},
		"z": {Type: ZSet, ZSet: zs},
	}
	for _, ver := range []int{10, 11} {
		var buf bytes.Buffer
		w := NewWriter(&buf, ver)
		w.SetLimits(c.lim)
		w.Header(nil)
		w.SelectDB(0, 4, 0)
		w.List([]byte("l"), 0, len(c.elems), slices.Values(c.elems))
		w.Set([]byte("s"), 0, len(members), slices.Values(members))
		w.Hash([]byte("h"), 0, len(hash), func(y func([]byte, []byte) bool) {
			for _, fv := range hash {
				y(fv[0], fv[1])
			}
		})
		w.ZSet([]byte("z"), 0, len(zs), func(y func([]byte, float64) bool) {
			for _, m := range zs {
				y(m.Member, m.Score)
			}
		})
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		got := map[string]*Entry{}
		if _, err := Load(bytes.NewReader(buf.Bytes()), "t.rdb", func(e *Entry) error {
			got[string(e.Key)] = e
			return nil
		}); err != nil {
			t.Fatalf("RDB %d: %v", ver, err)
		}
		for k, we := range want {
			if g := canonLP(got[k]); g != canonLP(we) {
				t.Fatalf("RDB %d key %s:\n got %s\nwant %s", ver, k, g, canonLP(we))
			}
		}
		// The same values as DUMP payloads through Restore.
		d := Dumper{Version: ver, Limits: c.lim}
		p, err := d.Hash(len(hash), func(y func([]byte, []byte) bool) {
			for _, fv := range hash {
				y(fv[0], fv[1])
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		e, err := Restore(p)
		if err != nil || canonLP(e) != canonLP(want["h"]) {
			t.Fatalf("RDB %d RESTORE hash: %v %s", ver, err, canonLP(e))
		}
		if p, err = d.List(len(c.elems), slices.Values(c.elems)); err != nil {
			t.Fatal(err)
		}
		if e, err = Restore(p); err != nil || canonLP(e) != canonLP(want["l"]) {
			t.Fatalf("RDB %d RESTORE list: %v %s", ver, err, canonLP(e))
		}
	}
}

// canonLP renders an entry comparably: a list in order, set members,
// hash pairs and sorted set members (with their scores' bits) sorted.
func canonLP(e *Entry) string {
	if e == nil {
		return "<missing>"
	}
	var parts []string
	switch e.Type {
	case List:
		return fmt.Sprintf("list %q", e.List)
	case Set:
		for _, m := range e.Set {
			parts = append(parts, string(m))
		}
	case Hash:
		for _, fv := range e.Hash {
			parts = append(parts, string(fv[0])+"="+string(fv[1]))
		}
	case ZSet:
		for _, m := range e.ZSet {
			parts = append(parts, fmt.Sprintf("%s=%x", m.Member, math.Float64bits(m.Score)))
		}
	}
	slices.Sort(parts)
	return fmt.Sprintf("%v %q", e.Type, parts)
}

// FuzzListpackRoundTrip: whatever the elements, every collection written
// (in listpack encodings when small, others when not) loads back equal.
func FuzzListpackRoundTrip(f *testing.F) {
	f.Add([]byte{0, 0, 1, 1, 2, 2, 3, 3, 5, 9})
	f.Add([]byte{7, 4, 1, 0, 9, 2, 250, 3, 17})
	f.Add([]byte{2, 0, 5, 0, 12, 0, 17, 1, 3, 1, 200})
	f.Fuzz(func(t *testing.T, data []byte) { checkLPRoundTrip(t, lpCaseFrom(data)) })
}

// TestListpackRoundTripRandom runs the fuzz target's check on 60 random
// inputs (the fuzz seeds alone are few).
func TestListpackRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 34))
	for range 60 {
		data := make([]byte, 1+r.IntN(200))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		checkLPRoundTrip(t, lpCaseFrom(data))
	}
}

// TestListpackBadScoreOrDeadline: a sorted set listpack whose score is not
// a number, or a listpack-ex whose field deadline is not an integer, is
// refused with the file and the value's offset (the values are a hash
// listpack's bytes under the other type byte).
func TestListpackBadScoreOrDeadline(t *testing.T) {
	for _, c := range []struct {
		typ   byte
		elems []string
		want  string
	}{
		{typeZSetListpack, []string{"m", "abc"}, `value listpack: bad score "abc"`},
		{typeZSetListpack, []string{"m", "nan"}, `value listpack: bad score "nan"`},
		{typeHashLpExPreGA, []string{"f", "v", "soon"}, "value listpack: bad field deadline"},
	} {
		var buf bytes.Buffer
		w := NewWriter(&buf, 11)
		w.SetLimits(Limits{NoCompression: true})
		w.Header(nil)
		w.SelectDB(0, 1, 0)
		w.Set([]byte("key"), 0, len(c.elems), slices.Values(bs(c.elems...)))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		dump := buf.Bytes()
		at := bytes.Index(dump, []byte("\x03key"))
		if at < 1 || dump[at-1] != typeSetListpack {
			t.Fatalf("%v: set listpack record not found", c.elems)
		}
		dump[at-1] = c.typ
		binary.LittleEndian.PutUint64(dump[len(dump)-8:], 0) // no checksum
		_, err := Load(bytes.NewReader(dump), "t.rdb", func(*Entry) error { return nil })
		want := fmt.Sprintf("t.rdb: offset %d: %s", at+4, c.want)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%v: %v, want %s...", c.elems, err, want)
		}
	}
}
