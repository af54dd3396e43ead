package slab

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestAgainstModel allocates, writes, and frees chunks of random sizes and
// checks that every live chunk keeps its bytes and that accounting returns
// to zero.
func TestAgainstModel(t *testing.T) {
	s := New(false)
	rng := rand.New(rand.NewPCG(1, 2))
	live := map[Ref][]byte{}
	var refs []Ref
	for i := 0; i < 200000; i++ {
		if len(refs) > 0 && rng.IntN(3) == 0 {
			j := rng.IntN(len(refs))
			ref := refs[j]
			want := live[ref]
			if got := s.Bytes(ref)[:len(want)]; !bytes.Equal(got, want) {
				t.Fatalf("op %d: ref %#x lost its bytes", i, ref)
			}
			s.Free(ref, len(want))
			delete(live, ref)
			refs[j] = refs[len(refs)-1]
			refs = refs[:len(refs)-1]
			continue
		}
		n := 1 + rng.IntN(200)
		if rng.IntN(50) == 0 {
			n = 1 + rng.IntN(3*MaxSmall)
		}
		ref, mem := s.Alloc(n)
		if ref == 0 {
			t.Fatal("Alloc returned the zero ref")
		}
		if _, dup := live[ref]; dup {
			t.Fatalf("ref %#x handed out twice", ref)
		}
		if len(mem) < n || s.Size(ref) != len(mem) {
			t.Fatalf("chunk of %d bytes for %d", len(mem), n)
		}
		val := make([]byte, n)
		for k := range val {
			val[k] = byte(rng.Uint32())
		}
		copy(mem, val)
		live[ref] = val
		refs = append(refs, ref)
	}
	for ref, want := range live {
		if !bytes.Equal(s.Bytes(ref)[:len(want)], want) {
			t.Fatalf("ref %#x lost its bytes", ref)
		}
		s.Free(ref, len(want))
	}
	if st := s.Stats(); st.InUse != 0 || st.Requested != 0 || st.Mapped != 0 {
		t.Fatalf("after freeing everything: %+v", st)
	}
}

func TestClassesCoverAllSizes(t *testing.T) {
	for n := 1; n <= MaxSmall; n++ {
		c := classFor(n)
		if classSizes[c] < n || (c > 0 && classSizes[c-1] >= n) {
			t.Fatalf("size %d maps to class %d (%d bytes)", n, c, classSizes[c])
		}
	}
}

func BenchmarkAllocFree(b *testing.B) {
	s := New(false)
	refs := make([]Ref, 1024)
	for i := range refs {
		refs[i], _ = s.Alloc(120)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		j := i & 1023
		s.Free(refs[j], 120)
		refs[j], _ = s.Alloc(120)
	}
}
