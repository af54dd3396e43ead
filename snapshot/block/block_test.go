package block

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

func sample(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 2))
	b := make([]byte, n)
	for i := range b {
		if r.IntN(4) == 0 {
			b[i] = byte(r.Uint32())
		} else {
			b[i] = "key:value-"[i%10]
		}
	}
	return b
}

func roundTrip(t testing.TB, data []byte, codec Codec, level int) []byte {
	var out bytes.Buffer
	w, err := NewWriter(&out, codec, level)
	if err != nil {
		t.Fatal(err)
	}
	// Odd write sizes cross block boundaries.
	for p := data; len(p) > 0; {
		k := min(len(p), 77777)
		if _, err := w.Write(p[:k]); err != nil {
			t.Fatal(err)
		}
		p = p[k:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Size() != int64(out.Len()) || w.RawSize() != int64(len(data)) {
		t.Fatalf("Size %d (wrote %d), RawSize %d (want %d)", w.Size(), out.Len(), w.RawSize(), len(data))
	}
	r := NewReader(bytes.NewReader(out.Bytes()), "test")
	defer r.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("%v: round trip differs (%d vs %d bytes)", codec, len(got), len(data))
	}
	return out.Bytes()
}

func TestRoundTrip(t *testing.T) {
	data := sample(BlockSize+12345, 1)
	for _, c := range []Codec{Raw, S2, Zstd} {
		for _, lvl := range []int{0, 3} {
			enc := roundTrip(t, data, c, lvl)
			if c != Raw && len(enc) >= len(data) {
				t.Errorf("%v level %d did not compress: %d -> %d", c, lvl, len(data), len(enc))
			}
		}
		roundTrip(t, nil, c, 0)
	}
	// Incompressible input is stored raw.
	noise := make([]byte, 100000)
	for i := range noise {
		noise[i] = byte(rand.Uint32())
	}
	roundTrip(t, noise, S2, 0)
}

func TestCorruption(t *testing.T) {
	data := sample(BlockSize+777, 3)
	for _, c := range []Codec{Raw, S2, Zstd} {
		enc := roundTrip(t, data, c, 0)
		for _, at := range []int{0, 9, 20, len(enc) / 2, len(enc) - 1} {
			bad := bytes.Clone(enc)
			bad[at] ^= 0x40
			if _, err := io.ReadAll(NewReader(bytes.NewReader(bad), "x")); err == nil {
				t.Errorf("%v: flipping byte %d went unnoticed", c, at)
			}
		}
		if _, err := io.ReadAll(NewReader(bytes.NewReader(enc[:len(enc)-3]), "x")); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%v: truncated stream: %v", c, err)
		}
	}
}

func FuzzReader(f *testing.F) {
	var b bytes.Buffer
	w, _ := NewWriter(&b, S2, 0)
	w.Write(sample(5000, 4))
	w.Close()
	f.Add(b.Bytes())
	b.Reset()
	w, _ = NewWriter(&b, Zstd, 0)
	w.Write(sample(5000, 5))
	w.Close()
	f.Add(b.Bytes())
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(bytes.NewReader(in), "fuzz")
		defer r.Close()
		_, _ = io.ReadAll(r) // must not panic or allocate without bound
	})
}
