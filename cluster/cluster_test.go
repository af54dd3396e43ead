package cluster

import (
	"strings"
	"testing"
)

// Values from redis-server 7.0.15's CLUSTER KEYSLOT and the cluster
// specification's check value (CRC16 of "123456789" is 0x31C3).
func TestKeySlot(t *testing.T) {
	if got := CRC16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("CRC16(123456789) = %#x, want 0x31c3", got)
	}
	for key, want := range map[string]int{
		"foo": 12182, "bar": 5061, "123456789": 12739, "{user1000}.following": 3443,
		"{user1000}.followers": 3443, "user1000": 3443, "": 0, "{}foo": KeySlot([]byte("{}foo")),
		"foo{}{bar}": KeySlot([]byte("foo{}{bar}")), "foo{{bar}}zap": KeySlot([]byte("{bar")),
		"foo{bar}{zap}": 5061, "{": KeySlot([]byte("{")),
	} {
		if got := KeySlot([]byte(key)); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", key, got, want)
		}
	}
	// An empty tag hashes the whole key.
	if HashTag([]byte("{}foo")) == nil || string(HashTag([]byte("{}foo"))) != "{}foo" {
		t.Error("empty hash tag must hash the whole key")
	}
}

const (
	idA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	idB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	idC = "cccccccccccccccccccccccccccccccccccccccc"
)

func TestParseTopology(t *testing.T) {
	text := idA + " 127.0.0.1 7000 master - 0-5460 5462\n" +
		idB + " 127.0.0.1 7001 master - 5461 5463-16383\n" +
		idC + " 127.0.0.1 7002 slave " + idA + "\n"
	tp, err := Parse(text, 3)
	if err != nil {
		t.Fatal(err)
	}
	if tp.Owner(0).ID != idA || tp.Owner(5461).ID != idB || tp.Owner(5462).ID != idA || tp.Owner(16383).ID != idB {
		t.Fatal("wrong owners")
	}
	if tp.Size() != 2 || tp.Assigned() != Slots || len(tp.Node(idA).Replicas) != 1 {
		t.Fatalf("size %d assigned %d", tp.Size(), tp.Assigned())
	}
	if got := tp.Text(); got != text {
		t.Fatalf("Text:\n%s\nwant\n%s", got, text)
	}
	if len(tp.Runs()) != 4 {
		t.Fatalf("runs %v", tp.Runs())
	}
	for bad, want := range map[string]error{
		idA + " h 1 master - 0-10\n" + idB + " h 2 master - 5": ErrOverlap,
		"short h 1 master -":             ErrInvalidNodeID,
		idA + " h 1 boss -":              ErrInvalidRole,
		idA + " h 1 master - 16384":      ErrSlotRange,
		idA + " h 1 master - 5-5":        ErrSlotRange,
		idA + " h x master -":            ErrInvalidPort,
		idA + " h 1 slave " + idB + " 5": ErrNodesInfo,
		idA + " h 1":                     ErrNodesInfo,
	} {
		if _, err := Parse(bad, 1); err != want {
			t.Errorf("Parse(%q) = %v, want %v", bad, err, want)
		}
	}
	moved, err := tp.WithSlots([]Range{{0, 10}}, idB, 4)
	if err != nil {
		t.Fatal(err)
	}
	if moved.Owner(5).ID != idB || tp.Owner(5).ID != idA || !strings.Contains(moved.Text(), " 0-10 ") {
		t.Fatalf("WithSlots: %s", moved.Text())
	}
	if _, err := tp.WithSlots([]Range{{0, 1}}, idB, 3); err != ErrVersion {
		t.Fatal("stale version accepted")
	}
	if _, err := tp.WithSlots([]Range{{0, 1}}, idC, 4); err != ErrNotPrimary {
		t.Fatal("slot given to a replica")
	}
}

func BenchmarkKeySlot(b *testing.B) {
	k := []byte("key:000000012345")
	for i := 0; i < b.N; i++ {
		KeySlot(k)
	}
}

func TestWithFailover(t *testing.T) {
	a, b, c, d := strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40), strings.Repeat("d", 40)
	text := a + " h 1 master - 0-100 200\n" + b + " h 2 slave " + a + "\n" + c + " h 3 master - 101-199 201-16383\n" + d + " h 4 slave " + a + "\n"
	t0, err := Parse(text, 7)
	if err != nil {
		t.Fatal(err)
	}
	t1, err := t0.WithFailover(b)
	if err != nil {
		t.Fatal(err)
	}
	want := a + " h 1 slave " + b + "\n" + b + " h 2 master - 0-100 200\n" + c + " h 3 master - 101-199 201-16383\n" + d + " h 4 slave " + b + "\n"
	if got := t1.Text(); got != want || t1.Version != 7 {
		t.Fatalf("got version %d\n%s\nwant\n%s", t1.Version, got, want)
	}
	if _, err := t0.WithFailover(a); err != ErrInvalidRole {
		t.Fatalf("failover of a primary: %v", err)
	}
}
