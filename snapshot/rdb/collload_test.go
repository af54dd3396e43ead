package rdb

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"
)

// rawDump is an RDB 9 file of one key "k" whose value record (type byte
// typ, then body) is written by hand, with its CRC64.
func rawDump(typ byte, body []byte) []byte {
	b := []byte("REDIS0009\xfe\x00")
	b = append(b, typ, 1, 'k')
	b = append(b, body...)
	b = append(b, 0xff)
	return binary.LittleEndian.AppendUint64(b, crcUpdate(0, b))
}

// rawStr appends an RDB string of length < 64.
func rawStr(b []byte, s string) []byte { return append(append(b, byte(len(s))), s...) }

// rawSpecial appends the string forms the writer does not use for
// elements: an int8-encoded integer and an LZF string (one literal run).
func rawSpecial(b []byte, n int8, lit string) []byte {
	b = append(b, 0xc0, byte(n))
	return append(append(b, 0xc3, byte(len(lit)+1), byte(len(lit)), byte(len(lit)-1)), lit...)
}

// cutEnd drops the EOF opcode and checksum: the file ends in the value.
func cutEnd(dump []byte) []byte { return dump[:len(dump)-9] }

func loadOne(t *testing.T, dump []byte, opt Options) (*Entry, error) {
	t.Helper()
	var got *Entry
	_, err := LoadWith(bytes.NewReader(dump), "t.rdb", opt, func(e *Entry) error {
		c := *e
		c.Key = append([]byte(nil), e.Key...)
		got = &c
		return nil
	})
	return got, err
}

// TestPlainListAndZSet2: RDB_TYPE_LIST and RDB_TYPE_ZSET_2 records (which
// the skimmer decodes itself) load with every string form, with and
// without Options.Reuse, and a big one whose record is cut as it is read
// keeps every element and the checksum.
func TestPlainListAndZSet2(t *testing.T) {
	lit := "a literal run of LZF, 31 bytes"
	list := rawSpecial(rawStr(rawStr([]byte{4}, "a"), ""), -7, lit)
	zset := rawStr([]byte{3}, "m")
	zset = binary.LittleEndian.AppendUint64(zset, math.Float64bits(1.5))
	zset = append(zset, 0xc0, 42)
	zset = binary.LittleEndian.AppendUint64(zset, math.Float64bits(math.Inf(-1)))
	zset = append(append(zset, 0xc3, byte(len(lit)+1), byte(len(lit)), byte(len(lit)-1)), lit...)
	zset = binary.LittleEndian.AppendUint64(zset, math.Float64bits(-0.25))
	var big, bigZ []byte
	var bigWant [][]byte
	var bigZWant []ZMember
	big = append(big, 0x40|byte(3000>>8), byte(3000&0xff))
	bigZ = append(bigZ, 0x40|byte(3000>>8), byte(3000&0xff))
	for i := range 3000 {
		s := fmt.Sprintf("%-50d", i)
		big, bigZ = rawStr(big, s), rawStr(bigZ, s)
		bigZ = binary.LittleEndian.AppendUint64(bigZ, math.Float64bits(float64(i)))
		bigWant = append(bigWant, []byte(s))
		bigZWant = append(bigZWant, ZMember{[]byte(s), float64(i)})
	}
	for _, c := range []struct {
		name string
		dump []byte
		want string
	}{
		{"list", rawDump(typeList, list), canon(List, 0, nil, bs("a", "", "-7", lit), nil, nil, nil)},
		{"zset", rawDump(typeZSet2, zset), canon(ZSet, 0, nil, nil, nil, nil,
			[]ZMember{{[]byte("m"), 1.5}, {[]byte("42"), math.Inf(-1)}, {[]byte(lit), -0.25}})},
		{"big list", rawDump(typeList, big), canon(List, 0, nil, bigWant, nil, nil, nil)},
		{"big zset", rawDump(typeZSet2, bigZ), canon(ZSet, 0, nil, nil, nil, nil, bigZWant)},
	} {
		for _, reuse := range []bool{false, true} {
			e, err := loadOne(t, c.dump, Options{Reuse: reuse})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if got := entryCanon(e); got != c.want || string(e.Key) != "k" {
				t.Errorf("%s (reuse %v): key %q %.200s, want %.200s", c.name, reuse, e.Key, got, c.want)
			}
		}
	}
}

// TestZSet2Corrupt: a NaN score, a truncated member list and a bad string
// are refused with the file and the offset.
func TestZSet2Corrupt(t *testing.T) {
	nan := binary.LittleEndian.AppendUint64(rawStr([]byte{1}, "m"), math.Float64bits(math.NaN()))
	for _, c := range []struct {
		name string
		dump []byte
		want string
	}{
		{"nan", rawDump(typeZSet2, nan), `t.rdb: offset 17: key "k": NaN score of member "m"`},
		{"truncated zset", cutEnd(rawDump(typeZSet2, rawStr([]byte{2}, "m"))), "t.rdb: offset 17: truncated score"},
		{"truncated list", cutEnd(rawDump(typeList, rawStr([]byte{3}, "a"))), "t.rdb: offset 17: truncated element"},
		{"bad string", rawDump(typeList, []byte{1, 0xc7}), "t.rdb: offset 15: unknown string encoding 7 in element"},
	} {
		_, err := loadOne(t, c.dump, Options{})
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %s...", c.name, err, c.want)
		}
	}
}
