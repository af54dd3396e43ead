package types

import "testing"

// mustPanic runs f and fails unless it panics.
func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", what)
		}
	}()
	f()
}

// TestStreamWriteGate: every change to a stream, its groups, consumers and
// pending entries refuses the zero W (a command that forgot DB.Modify) and
// the W of another stream, and changes nothing then; a group checks the W
// of the stream that holds it, also in a copy.
func TestStreamWriteGate(t *testing.T) {
	s, w := NewStream()
	fv := [][]byte{[]byte("f"), []byte("v")}
	for i := uint64(1); i <= 4; i++ {
		if err := s.Add(w, StreamID{Ms: i}, fv, nil); err != nil {
			t.Fatal(err)
		}
	}
	g := s.CreateGroup(w, []byte("g"), StreamID{}, 0)
	c, _ := g.CreateConsumer(w, []byte("c"), 1, 1)
	g.Deliver(w, c, StreamID{Ms: 1}, 5, false)
	other, ow := NewStream()
	canon := func() string {
		var b []byte
		b = append(b, s.LastID().String()...)
		s.Range(StreamID{}, MaxStreamID, false, func(id StreamID, _ [][]byte) bool { b = append(b, id.String()...); return true })
		s.Groups(func(g *StreamGroup) bool {
			b = append(b, g.Name()+g.LastID().String()...)
			g.PendingAscend(StreamID{}, func(p *PendingEntry, o *StreamConsumer) bool {
				b = append(b, p.ID().String()+o.Name()...)
				b = append(b, byte(p.DeliveryTime()), byte(p.DeliveryCount()), byte(o.SeenTime()))
				return true
			})
			return true
		})
		return string(b)
	}
	before := canon()
	p := g.Pending(StreamID{Ms: 1})
	changes := map[string]func(W){
		"Add":            func(w W) { s.Add(w, StreamID{Ms: 9}, fv, nil) },
		"Delete":         func(w W) { s.Delete(w, StreamID{Ms: 2}) },
		"Trim":           func(w W) { s.Trim(w, TrimArgs{Enabled: true, MaxLen: true, N: 1}) },
		"SetLastID":      func(w W) { s.SetLastID(w, StreamID{Ms: 99}, 99, StreamID{}) },
		"LoadNode":       func(w W) { s.LoadNode(w, StreamID{Ms: 100}, nil) },
		"SetMeta":        func(w W) { s.SetMeta(w, StreamMeta{}) },
		"NoteDelivered":  func(w W) { s.NoteDelivered(w, g, StreamID{Ms: 3}) },
		"CreateGroup":    func(w W) { s.CreateGroup(w, []byte("g2"), StreamID{}, 0) },
		"DeleteGroup":    func(w W) { s.DeleteGroup(w, []byte("g")) },
		"SetGroupLastID": func(w W) { g.SetLastID(w, StreamID{Ms: 3}) },
		"SetEntriesRead": func(w W) { g.SetEntriesRead(w, 7) },
		"CreateConsumer": func(w W) { g.CreateConsumer(w, []byte("d"), 1, 1) },
		"DeleteConsumer": func(w W) { g.DeleteConsumer(w, []byte("c")) },
		"AddPending":     func(w W) { g.AddPending(w, StreamID{Ms: 4}, 1, 1) },
		"AssignPending":  func(w W) { g.AssignPending(w, c, StreamID{Ms: 4}) },
		"Deliver":        func(w W) { g.Deliver(w, c, StreamID{Ms: 2}, 9, true) },
		"Ack":            func(w W) { g.Ack(w, StreamID{Ms: 1}) },
		"SetDelivery":    func(w W) { g.SetDelivery(w, p, 77, 77) },
		"SetSeen":        func(w W) { g.SetSeen(w, c, 77) },
	}
	for name, change := range changes {
		mustPanic(t, name+" with the zero W", func() { change(W{}) })
		mustPanic(t, name+" with another stream's W", func() { change(ow) })
	}
	if got := canon(); got != before {
		t.Fatalf("a refused change changed the stream:\n got %q\nwant %q", got, before)
	}
	other.Add(ow, StreamID{Ms: 1}, fv, nil) // its own W works

	// A copy's groups are the copy's: its W changes them, s's does not.
	cp, cw := s.CloneW()
	cg := cp.Group([]byte("g"))
	cg.Ack(cw, StreamID{Ms: 1})
	mustPanic(t, "a copy's group with the original's W", func() { cg.SetLastID(w, StreamID{Ms: 4}) })
	mustPanic(t, "the original's group with the copy's W", func() { g.SetLastID(cw, StreamID{Ms: 4}) })
	if g.PendingLen() != 1 || cg.PendingLen() != 0 {
		t.Fatalf("pending: original %d (want 1), copy %d (want 0)", g.PendingLen(), cg.PendingLen())
	}
}

// BenchmarkWriteGateStream is the gate's own cost on a stream change: Ack
// (checks the W) against ack (none), with Deliver re-adding the entry.
func BenchmarkWriteGateStream(b *testing.B) {
	s, w := NewStream()
	s.Add(w, StreamID{Ms: 1}, [][]byte{[]byte("f"), []byte("v")}, nil)
	g := s.CreateGroup(w, []byte("g"), StreamID{}, 0)
	c, _ := g.CreateConsumer(w, []byte("c"), 1, 1)
	id := StreamID{Ms: 1}
	b.Run("unchecked", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			g.deliver(c, id, 1, false)
			g.ack(id)
		}
	})
	b.Run("checked", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			g.Deliver(w, c, id, 1, false)
			g.Ack(w, id)
		}
	})
}
