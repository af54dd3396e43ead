package rdb

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/damselflydb/damselfly/listpack"
)

// testListpack is a minimal valid stream node listpack (one entry, field
// "f" value "v", master ID = entry ID): count 1, deleted 0, 1 field "f", 0,
// then flags SAMEFIELDS, ms-diff 0, seq-diff 0, "v", lp-count 4.
func testListpack() []byte {
	var lp listpack.Builder
	lp.Reset()
	lp.AppendInt(1)
	lp.AppendInt(0)
	lp.AppendInt(1)
	lp.AppendString([]byte("f"))
	lp.AppendInt(0)
	lp.AppendInt(2)
	lp.AppendInt(0)
	lp.AppendInt(0)
	lp.AppendString([]byte("v"))
	lp.AppendInt(4)
	return bytes.Clone(lp.Finish())
}

// TestStreamVersions: a stream written as RDB 10 (type 19) and RDB 11/12
// (type 21, with consumers' active times) reads back with every field; in
// type 19 the active time reads as the seen time, as Redis 7.2 loads it.
func TestStreamVersions(t *testing.T) {
	v := &StreamValue{
		Nodes:  []StreamNode{{Master: StreamID{5, 1}, LP: testListpack()}},
		Length: 1, LastID: StreamID{7, 0}, FirstID: StreamID{5, 1}, MaxDeletedID: StreamID{6, 3}, EntriesAdded: 9, HasV2: true,
		Groups: []StreamGroup{{
			Name: []byte("g"), LastID: StreamID{5, 1}, EntriesRead: -1, HasEntriesRead: true,
			PEL:       []StreamNACK{{ID: StreamID{5, 1}, DeliveryTime: 1700000000123, DeliveryCount: 3}},
			Consumers: []StreamConsumer{{Name: []byte("12345"), SeenTime: 1700000000999, ActiveTime: 1700000000555, PEL: []StreamID{{5, 1}}}},
		}},
	}
	for _, ver := range []int{10, 11, 12} {
		var buf bytes.Buffer
		w := NewWriter(&buf, ver)
		w.Header(nil)
		w.SelectDB(0, 1, 1)
		if err := w.Stream([]byte("k"), 4102444800000, v); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		var got *Entry
		if _, err := Load(bytes.NewReader(buf.Bytes()), "s.rdb", func(e *Entry) error { got = e; return nil }); err != nil {
			t.Fatalf("RDB %d: %v", ver, err)
		}
		want := *v
		want.Groups = []StreamGroup{v.Groups[0]}
		want.Groups[0].Consumers = []StreamConsumer{v.Groups[0].Consumers[0]}
		if ver == 10 {
			want.Groups[0].Consumers[0].ActiveTime = want.Groups[0].Consumers[0].SeenTime
		}
		if got == nil || got.Type != Stream || string(got.Key) != "k" || got.ExpireAtMs != 4102444800000 || !reflect.DeepEqual(*got.Stream, want) {
			t.Fatalf("RDB %d: got %+v\nwant %+v", ver, got.Stream, want)
		}
		wantType := byte(typeStreamListpacks2)
		if ver >= 11 {
			wantType = typeStreamListpacks3
		}
		if i := bytes.Index(buf.Bytes(), []byte{wantType, 1, 'k'}); i < 0 {
			t.Fatalf("RDB %d: no type %d record", ver, wantType)
		}
	}
	// DUMP payloads carry the same.
	p, err := Dumper{}.Stream(v)
	if err != nil {
		t.Fatal(err)
	}
	if ver := binary.LittleEndian.Uint16(p[len(p)-10:]); ver != 10 {
		t.Fatalf("payload version %d", ver)
	}
	e, err := Restore(p)
	if err != nil || e.Stream.LastID != v.LastID || len(e.Stream.Groups[0].PEL) != 1 {
		t.Fatalf("Restore: %+v %v", e, err)
	}
}

// TestStreamType15: the pre-7.0 layout (RDB 9, RDB_TYPE_STREAM_LISTPACKS:
// no first/max-deleted IDs, entries-added or entries-read) reads with those
// marked absent.
func TestStreamType15(t *testing.T) {
	b := []byte("REDIS0009")
	b = append(b, opSelectDB, 0, typeStreamListpacks, 1, 'k')
	b = appendLength(b, 1) // one node
	b = append(b, 16)
	b = appendRawID(b, StreamID{5, 1})
	lp := testListpack()
	b = appendLength(b, uint64(len(lp)))
	b = append(b, lp...)
	b = append(b, 1, 7, 0)         // length 1, last ID 7-0
	b = append(b, 1, 1, 'g', 5, 1) // one group "g", last ID 5-1
	b = append(b, 1)
	b = appendRawID(b, StreamID{5, 1})
	b = binary.LittleEndian.AppendUint64(b, 1700000000123)
	b = append(b, 2)         // delivery count
	b = append(b, 1, 1, 'c') // one consumer "c"
	b = binary.LittleEndian.AppendUint64(b, 1700000000999)
	b = append(b, 1)
	b = appendRawID(b, StreamID{5, 1})
	b = append(b, opEOF)
	b = binary.LittleEndian.AppendUint64(b, crc64(b))
	var got *Entry
	if _, err := Load(bytes.NewReader(b), "v9.rdb", func(e *Entry) error { got = e; return nil }); err != nil {
		t.Fatal(err)
	}
	s := got.Stream
	if s.HasV2 || s.Length != 1 || s.LastID != (StreamID{7, 0}) || len(s.Nodes) != 1 || !bytes.Equal(s.Nodes[0].LP, lp) {
		t.Fatalf("stream %+v", s)
	}
	g := s.Groups[0]
	if g.HasEntriesRead || string(g.Name) != "g" || g.PEL[0].DeliveryCount != 2 || g.Consumers[0].ActiveTime != 1700000000999 {
		t.Fatalf("group %+v", g)
	}
}
