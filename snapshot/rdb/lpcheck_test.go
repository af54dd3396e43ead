package rdb

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/damselflydb/damselfly/listpack"
)

// TestCorruptListpackValues: a broken listpack inside a hash, set, sorted
// set or quicklist node is reported with what is wrong and where, never as
// an internal error, for every byte of the listpack changed.
func TestCorruptListpackValues(t *testing.T) {
	elems := [][]byte{[]byte("f1"), []byte("v1"), []byte("f2"), []byte("12")}
	var b listpack.Builder
	b.Reset()
	for _, e := range elems {
		b.AppendString(e)
	}
	lp := bytes.Clone(b.Finish())
	kinds := map[string]func(w *Writer){
		"hash": func(w *Writer) {
			w.Hash([]byte("k"), 0, 2, func(y func([]byte, []byte) bool) { y(elems[0], elems[1]); y(elems[2], elems[3]) })
		},
		"zset": func(w *Writer) { // not the same bytes: only checked to load
			w.ZSet([]byte("k"), 0, 2, func(y func([]byte, float64) bool) { y(elems[0], 1); y(elems[2], 2) })
		},
		"set": func(w *Writer) {
			w.Set([]byte("k"), 0, 4, func(y func([]byte) bool) {
				for _, e := range elems {
					y(e)
				}
			})
		},
		"list": func(w *Writer) {
			w.List([]byte("k"), 0, 4, func(y func([]byte) bool) {
				for _, e := range elems {
					y(e)
				}
			})
		},
	}
	for name, write := range kinds {
		var buf bytes.Buffer
		w := NewWriter(&buf, 11)
		w.SetLimits(Limits{NoCompression: true})
		w.Header(nil)
		w.SelectDB(0, 1, 0)
		write(w)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		dump := buf.Bytes()
		if _, err := Load(bytes.NewReader(dump), "t.rdb", func(*Entry) error { return nil }); err != nil {
			t.Fatalf("%s: intact dump: %v", name, err)
		}
		at := bytes.Index(dump, lp)
		if name == "zset" {
			continue
		}
		if at < 0 {
			t.Fatalf("%s: listpack not found in the dump", name)
		}
		for i := range lp {
			for _, x := range []byte{0x00, 0x7f, 0xc1, 0xf5, 0xff} {
				if lp[i] == x {
					continue
				}
				bad := bytes.Clone(dump)
				bad[at+i] = x
				fixCRC(bad)
				_, err := Load(bytes.NewReader(bad), "t.rdb", func(*Entry) error { return nil })
				if err == nil {
					continue // a change that still makes a valid listpack (e.g. a string's content)
				}
				if msg := err.Error(); strings.Contains(msg, "internal error") || !strings.Contains(msg, "listpack") && !strings.Contains(msg, "quicklist") {
					t.Fatalf("%s: byte %d = %#x: %v", name, i, x, err)
				}
			}
		}
	}
}

// fixCRC rewrites the trailing checksum of an RDB file changed in place.
func fixCRC(b []byte) {
	binary.LittleEndian.PutUint64(b[len(b)-8:], crc64(b[:len(b)-8]))
}
