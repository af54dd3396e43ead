package rdb

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// Valkey 9 dumps are built here byte by byte (no Valkey 9 release was at
// hand to build): Valkey's rdb.h and rdb.c at 9.0 write the "VALKEY080"
// magic, hashes with field TTLs as RDB_TYPE_HASH_2 (22: count, then field,
// value and an 8-byte little-endian expiry in ms, -1 for none), the slot
// import state as opcode 243 and slot info as opcode 244.

func rstr(b []byte, s string) []byte { return append(appendLength(b, uint64(len(s))), s...) }

// finishFile appends EOF and the CRC64 of everything before it.
func finishFile(b []byte) []byte {
	b = append(b, opEOF)
	return binary.LittleEndian.AppendUint64(b, crc64(b))
}

func valkey9File(magic string, body func(b []byte) []byte) []byte {
	b := []byte(magic)
	b = rstr(append(b, opAux), "valkey-ver")
	b = rstr(b, "9.0.0")
	b = append(b, opSelectDB, 0)
	return finishFile(body(b))
}

func TestLoadValkey9(t *testing.T) {
	data := valkey9File("VALKEY080", func(b []byte) []byte {
		// slot import state (cluster metadata): job "j1", ranges 0-100, 200-300
		b = rstr(append(b, op243), "j1")
		b = append(b, 2, 0, 0x40|(100>>8), 100&0xff, 0x40|(200>>8), 200&0xff, 0x41, 300&0xff)
		b = append(b, opSlotInfo, 5, 1, 0)
		b = rstr(append(b, typeString), "s")
		b = rstr(b, "v")
		b = rstr(append(b, typeHashMetaPreGA), "h") // 22 = RDB_TYPE_HASH_2 under "VALKEY"
		b = append(b, 2)
		b = rstr(rstr(b, "f1"), "v1")
		b = binary.LittleEndian.AppendUint64(b, 4102444800123)
		b = rstr(rstr(b, "f2"), "v2")
		none := int64(-1)
		return binary.LittleEndian.AppendUint64(b, uint64(none))
	})
	got, info := loadAll(t, data, "valkey9.rdb")
	want := map[string]string{
		"0/s": canon(String, 0, []byte("v"), nil, nil, nil, nil),
		"0/h": canon(Hash, 0, nil, nil, nil, [][2][]byte{{[]byte("f1"), []byte("v1")}, {[]byte("f2"), []byte("v2")}}, nil) +
			ttlSuffix(map[string]int64{"f1": 4102444800123}),
	}
	compare(t, want, got)
	if info.Version != 80 || !info.Valkey || !info.ChecksumVerified || info.Aux["valkey-ver"] != "9.0.0" ||
		len(info.Warnings) != 1 || !strings.Contains(info.Warnings[0], "slot import") {
		t.Errorf("info = %+v", info)
	}
}

// TestRefusedByName: what cannot be loaded is refused with the file, the
// offset and a reason naming the thing.
func TestRefusedByName(t *testing.T) {
	redisFile := func(ver string, body func(b []byte) []byte) []byte {
		b := append([]byte("REDIS"+ver), opSelectDB, 0)
		return finishFile(body(b))
	}
	keyMeta := redisFile("0012", func(b []byte) []byte { return append(b, op243, 0) })
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"valkey foreign range", valkey9File("VALKEY012", func(b []byte) []byte { return b }), "x.rdb: offset 6: bad Valkey RDB version \"012\""},
		{"valkey future", valkey9File("VALKEY081", func(b []byte) []byte { return b }), "x.rdb: offset 6: Valkey RDB version 81 is newer than supported (80)"},
		{"redis future", redisFile("0013", func(b []byte) []byte { return b }), "x.rdb: offset 5: RDB version 13 is newer than supported (12"},
		{"redis key meta", keyMeta, "x.rdb: offset 11: key metadata (opcode 243, RDB_OPCODE_KEY_META, Redis 8.2+) not supported"},
		{"redis type under valkey", valkey9File("VALKEY080", func(b []byte) []byte {
			return append(rstr(append(b, typeHashLpEx), "k"), 0)
		}), "value type 25 is not one of Valkey 9's"},
		{"pre-release functions", redisFile("0010", func(b []byte) []byte { return rstr(append(b, opFunctionPre), "x") }), "opcode 246, Redis 7.0 release candidates"},
	} {
		_, err := Load(bytes.NewReader(c.data), "x.rdb", func(*Entry) error { return nil })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}
