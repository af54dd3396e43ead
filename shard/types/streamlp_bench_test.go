package types

import (
	"testing"
)

// BenchmarkStreamAddRange measures the Redis-listpack side of the shard's
// in-memory types: XADD-like appends into stream nodes, then a full forward
// and backward XRANGE walk over them (per entry).
func BenchmarkStreamAddRange(b *testing.B) {
	const n = 10000
	fv := [][]byte{[]byte("field"), []byte("value-0123456789"), []byte("n"), []byte("12345")}
	for b.Loop() {
		s := newStream()
		for j := 0; j < n; j++ {
			id, _ := s.NextID(uint64(1700000000000 + j/10))
			if err := s.add(id, fv, nil); err != nil {
				b.Fatal(err)
			}
		}
		cnt := 0
		for _, rev := range []bool{false, true} {
			s.Range(StreamID{}, StreamID{Ms: ^uint64(0), Seq: ^uint64(0)}, rev, func(StreamID, [][]byte) bool {
				cnt++
				return true
			})
		}
		if cnt != 2*n {
			b.Fatal(cnt)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/entry")
}

// BenchmarkStreamLoadNodes measures validating and adopting Redis node
// listpacks (what RDB load and RESTORE of a stream do), per entry.
func BenchmarkStreamLoadNodes(b *testing.B) {
	const n = 10000
	fv := [][]byte{[]byte("field"), []byte("value-0123456789"), []byte("n"), []byte("12345")}
	src := newStream()
	for j := 0; j < n; j++ {
		id, _ := src.NextID(uint64(1700000000000 + j/10))
		src.add(id, fv, nil)
	}
	type node struct {
		m  StreamID
		lp []byte
	}
	var nodes []node
	src.Nodes(func(m StreamID, lp []byte) bool {
		nodes = append(nodes, node{m, append([]byte(nil), lp...)})
		return true
	})
	for b.Loop() {
		s := newStream()
		for _, nd := range nodes {
			if err := s.loadNode(nd.m, append([]byte(nil), nd.lp...)); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/entry")
}
