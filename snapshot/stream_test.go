package snapshot

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hdt3213/rdb/crc64jones"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/shard/types"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

// TestCorruptStreamPayloads: stream DUMP payloads with bytes flipped (and a
// valid checksum, so they reach the decoder) are rejected or give a stream
// every operation works on; nothing panics.
func TestCorruptStreamPayloads(t *testing.T) {
	st := shard.NewStore(1, 1)
	s := testStream(300, time.Now().UnixMilli())
	put(st, 0, "x", shard.Value{Type: shard.TypeStream, Obj: s})
	sh, h := st.ShardOf([]byte("x"))
	sh.Lock()
	e, _ := sh.DB(0).Find(h, []byte("x"))
	p, err := Dump(&e)
	sh.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	rejected := 0
	for i := 0; i < 3000; i++ {
		c := append([]byte(nil), p...)
		for k := 1 + r.IntN(3); k > 0; k-- {
			c[r.IntN(len(c)-10)] ^= byte(1 << r.IntN(8))
		}
		body := c[:len(c)-8]
		d := crc64jones.New()
		d.Write(body)
		binary.LittleEndian.PutUint64(c[len(c)-8:], d.Sum64())
		re, err := rdb.Restore(c)
		if err != nil {
			rejected++
			continue
		}
		v, err := Value(re)
		if err != nil {
			rejected++
			continue
		}
		x := v.Obj.(*types.Stream)
		x.Range(types.StreamID{}, types.MaxStreamID, false, func(types.StreamID, [][]byte) bool { return true })
		x.Range(types.StreamID{}, types.MaxStreamID, true, func(types.StreamID, [][]byte) bool { return true })
		x.Groups(func(g *types.StreamGroup) bool {
			g.PendingAscend(types.StreamID{}, func(p *types.PendingEntry, c *types.StreamConsumer) bool { _ = c.Name(); return true })
			return true
		})
		id, _ := x.NextID(uint64(time.Now().UnixMilli()))
		x, w := x.CloneW() // a loaded value is changed only once stored (Modify); its copy here
		x.Add(w, id, [][]byte{[]byte("f"), []byte("v")}, nil)
		x.Trim(w, types.TrimArgs{Enabled: true, MaxLen: true, N: 10})
		x.Delete(w, id)
		x.RaxNodes()
	}
	if rejected == 0 {
		t.Fatal("no corruption detected")
	}
	t.Logf("%d of 3000 corrupted payloads rejected", rejected)
}
