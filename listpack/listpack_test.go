package listpack

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// goldenInputs is a deterministic set of element sequences covering every
// encoding and backlen size; testdata/golden.txt holds the listpacks the
// code before this package (snapshot/rdb's builder and shard/types's
// append) produced for them, so the bytes stay Redis's and unchanged.
func goldenInputs() [][][]byte {
	var out [][][]byte
	ints := []int64{0, 1, 127, 128, -1, -4096, 4095, 4096, -4097, 32767, -32768, 32768, -32769,
		8388607, -8388608, 8388608, -8388609, 2147483647, -2147483648, 2147483648, -2147483649,
		9223372036854775807, -9223372036854775808}
	var one [][]byte
	for _, v := range ints {
		one = append(one, []byte(strconv.FormatInt(v, 10)))
	}
	out = append(out, one)
	strs := [][]byte{{}, []byte("a"), []byte("007"), []byte("-0"), []byte("+1"), []byte(" 1"), []byte("1 "),
		[]byte("9223372036854775808"), []byte("-9223372036854775809"), []byte("1.5"), []byte("hello world")}
	out = append(out, strs)
	for _, n := range []int{62, 63, 64, 65, 126, 127, 128, 4094, 4095, 4096, 16380, 16383, 16384, 70000} {
		out = append(out, [][]byte{bytes.Repeat([]byte{'x'}, n), []byte("12")})
	}
	seed := uint64(1)
	for range 40 {
		var seq [][]byte
		k := int(seed % 50)
		for range k {
			seed = seed*6364136223846793005 + 1442695040888963407
			switch seed >> 61 {
			case 0, 1:
				seq = append(seq, []byte(strconv.FormatInt(int64(seed>>(seed%64)), 10)))
			case 2:
				seq = append(seq, []byte(strconv.FormatInt(-int64(seed>>(seed%64)), 10)))
			default:
				seq = append(seq, bytes.Repeat([]byte{byte('a' + seed%26)}, int(seed>>50)%300))
			}
		}
		out = append(out, seq)
	}
	big := make([][]byte, 70000) // past UnknownCount
	for i := range big {
		big[i] = []byte(strconv.Itoa(i % 300))
	}
	out = append(out, big)
	return out
}

// TestGolden: Builder and Push produce, for every golden input, exactly the
// bytes the code before this package produced.
func TestGolden(t *testing.T) {
	data, err := os.ReadFile("testdata/golden.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	inputs := goldenInputs()
	if len(lines) != len(inputs) {
		t.Fatalf("%d golden lines, %d inputs", len(lines), len(inputs))
	}
	var b Builder
	for i, seq := range inputs {
		f := strings.Fields(lines[i])
		b.Reset()
		lp := New(0)
		for _, s := range seq {
			b.AppendString(s)
			lp = Push(lp, s)
		}
		got := b.Finish()
		if !bytes.Equal(got, lp) {
			t.Fatalf("input %d: Builder and Push disagree", i)
		}
		sum := sha256.Sum256(got)
		if strconv.Itoa(len(got)) != f[0] || hex.EncodeToString(sum[:]) != f[1] {
			if f[2] != "-" {
				t.Fatalf("input %d:\n got %x\nwant %s", i, got, f[2])
			}
			t.Fatalf("input %d: %d bytes, sha256 %x; want %s %s", i, len(got), sum, f[0], f[1])
		}
		n, err := Validate(got)
		if err != nil || n != len(seq) {
			t.Fatalf("input %d: Validate = %d, %v; want %d", i, n, err, len(seq))
		}
	}
}

// model is a listpack's contents as plain strings: what the decoder must
// give back.
type model [][]byte

// check compares lp with m: Validate's count, a forward walk, a backward
// walk, Builder's bytes for the same elements, and the sizes.
func (m model) check(t testing.TB, lp []byte) {
	t.Helper()
	n, err := Validate(lp)
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if n != len(m) {
		t.Fatalf("Validate counted %d, model has %d", n, len(m))
	}
	want := EmptySize
	var scratch []byte
	off := First
	for i, s := range m {
		var got []byte
		got, off = Bytes(lp, off, &scratch)
		if !bytes.Equal(got, s) {
			t.Fatalf("element %d forward: %q, want %q", i, got, s)
		}
		want += EntrySize(s)
	}
	if off != End(lp) || len(lp) != want {
		t.Fatalf("walk ended at %d of %d; size %d, want %d", off, End(lp), len(lp), want)
	}
	end := End(lp)
	for i := len(m) - 1; i >= 0; i-- {
		start := Prev(lp, end)
		got, next := Bytes(lp, start, &scratch)
		if next != end || !bytes.Equal(got, m[i]) {
			t.Fatalf("element %d backward: %q (next %d, end %d), want %q", i, got, next, end, m[i])
		}
		end = start
	}
	if end != First {
		t.Fatalf("backward walk ended at %d", end)
	}
	var b Builder
	b.Reset()
	for _, s := range m {
		b.AppendString(s)
	}
	if fin := b.Finish(); len(m) < UnknownCount && !bytes.Equal(fin, lp) {
		t.Fatalf("Builder:\n%x\nPush/ReplaceInt:\n%x", fin, lp)
	}
}

// randElem returns an element that exercises the encodings' edges.
func randElem(r *rand.Rand) []byte {
	switch r.IntN(8) {
	case 0: // an integer near an encoding boundary
		edges := []int64{0, 127, 4095, -4096, 32767, -32768, 8388607, -8388608, 2147483647, -2147483648}
		v := edges[r.IntN(len(edges))] + int64(r.IntN(3)) - 1
		return []byte(strconv.FormatInt(v, 10))
	case 1:
		return []byte(strconv.FormatInt(int64(r.Uint64()), 10))
	case 2: // not canonical: must stay a string
		return []byte([]string{"007", "-0", "+1", " 1", "1 ", "", "-", "9223372036854775808", "0x1", "1e3"}[r.IntN(10)])
	case 3: // long strings around the 6/12-bit length and backlen edges
		n := []int{63, 64, 127, 128, 4095, 4096, 16380, 16383}[r.IntN(8)] + r.IntN(3) - 1
		return bytes.Repeat([]byte{byte('a' + r.IntN(26))}, n)
	default:
		b := make([]byte, r.IntN(20))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return b
	}
}

// TestModel applies random appends and integer replacements to a listpack
// and to a model, checking after each step that they agree.
func TestModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		lp := New(r.IntN(64))
		var m model
		for range r.IntN(60) {
			switch {
			case r.IntN(5) == 0 && len(m) > 0: // ReplaceInt at a random element
				i := r.IntN(len(m))
				off := First
				for range i {
					off = Skip(lp, off)
				}
				v := int64(r.Uint64()) >> r.IntN(64)
				lp = ReplaceInt(lp, off, v)
				m[i] = []byte(strconv.FormatInt(v, 10))
			case r.IntN(4) == 0:
				v := int64(r.Uint64()) >> r.IntN(64)
				lp = PushInt(lp, v)
				m = append(m, []byte(strconv.FormatInt(v, 10)))
			default:
				s := randElem(r)
				lp = Push(lp, s)
				m = append(m, s)
			}
			m.check(t, lp)
		}
		_ = round
	}
}

// TestParseInt: ParseInt accepts exactly the strings that are the decimal
// form of an int64.
func TestParseInt(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	check := func(s string) {
		v, ok := ParseInt([]byte(s))
		pv, err := strconv.ParseInt(s, 10, 64)
		want := err == nil && strconv.FormatInt(pv, 10) == s
		if ok != want || (ok && v != pv) {
			t.Fatalf("ParseInt(%q) = %d, %v; want %d, %v", s, v, ok, pv, want)
		}
	}
	for _, s := range []string{"", "0", "-0", "00", "01", "-", "+1", "1", "-1", " 1", "9223372036854775807",
		"9223372036854775808", "-9223372036854775808", "-9223372036854775809", "18446744073709551615",
		"18446744073709551616", "99999999999999999999", "-99999999999999999999", "123456789012345678901"} {
		check(s)
	}
	for range 20000 {
		check(string(randElem(r)))
	}
}

// TestCorrupt: Validate refuses broken listpacks with an error that wraps
// ErrCorrupt and says what is wrong.
func TestCorrupt(t *testing.T) {
	var b Builder
	b.Reset()
	b.AppendString([]byte("hello"))
	b.AppendInt(1000)
	good := bytes.Clone(b.Finish())
	mut := func(f func(p []byte) []byte) []byte { return f(bytes.Clone(good)) }
	cases := []struct {
		name string
		lp   []byte
		want string
	}{
		{"empty", nil, "shorter than"},
		{"short", []byte{7, 0, 0, 0, 0, 0}, "shorter than"},
		{"total", mut(func(p []byte) []byte { p[0]++; return p }), "total-bytes"},
		{"terminator", mut(func(p []byte) []byte { p[len(p)-1] = 0; return p }), "no terminator"},
		{"count", mut(func(p []byte) []byte { p[4] = 3; return p }), "num-elements"},
		{"encoding", mut(func(p []byte) []byte { p[HeaderSize] = 0xf5; return p }), "invalid encoding"},
		{"length", mut(func(p []byte) []byte { p[HeaderSize] = 0x80 | 60; return p }), "overruns"},
		{"backlen", mut(func(p []byte) []byte { p[HeaderSize+6]++; return p }), "backlen"},
		{"truncated", func() []byte {
			p := []byte{0, 0, 0, 0, 1, 0, 0xf0, 1, EOF}
			binary.LittleEndian.PutUint32(p, uint32(len(p)))
			return p
		}(), "truncated"},
	}
	for _, c := range cases {
		_, err := Validate(c.lp)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an ErrCorrupt saying %q", c.name, err, c.want)
		}
	}
	if _, err := Validate(good); err != nil {
		t.Fatal(err)
	}
	// Every truncation and every single-byte change is refused or still
	// walks safely.
	for i := range good {
		walkAny(t, good[:i])
		for _, x := range []byte{0, 1, 0x7f, 0x80, 0xc0, 0xe0, 0xf0, 0xf4, 0xff} {
			p := bytes.Clone(good)
			p[i] = x
			walkAny(t, p)
		}
	}
}

// walkAny validates arbitrary bytes and, when they pass, walks them both
// ways with the trusted readers, which must agree with Validate's count.
func walkAny(t testing.TB, lp []byte) {
	n, err := Validate(lp)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error %v does not wrap ErrCorrupt", err)
		}
		return
	}
	var fwd [][]byte
	var scratch []byte
	for off := First; off < End(lp); {
		var s []byte
		s, off = Bytes(lp, off, &scratch)
		fwd = append(fwd, s)
	}
	if len(fwd) != n {
		t.Fatalf("Validate counted %d, walk found %d", n, len(fwd))
	}
	end := End(lp)
	for i := n - 1; i >= 0; i-- {
		start := Prev(lp, end)
		if start < First {
			t.Fatalf("backward walk left the listpack at element %d", i)
		}
		s, next := Bytes(lp, start, &scratch)
		if next != end || !bytes.Equal(s, fwd[i]) {
			t.Fatalf("element %d: backward %q, forward %q", i, s, fwd[i])
		}
		end = start
	}
}

// FuzzValidate feeds hostile bytes to Validate (never panics, errors wrap
// ErrCorrupt) and walks whatever it accepts both ways.
func FuzzValidate(f *testing.F) {
	var b Builder
	for _, seq := range goldenInputs()[:4] {
		b.Reset()
		for _, s := range seq {
			b.AppendString(s)
		}
		f.Add(bytes.Clone(b.Finish()))
	}
	f.Add([]byte{7, 0, 0, 0, 0, 0, EOF})
	f.Fuzz(func(t *testing.T, lp []byte) {
		walkAny(t, lp)
	})
}

// FuzzRoundTrip splits the input into elements at 0x00 bytes, encodes them
// with Push and Builder and checks the decoding against the elements.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("a\x00123\x00-5\x00007\x00\x00" + strings.Repeat("x", 70)))
	f.Add([]byte("9223372036854775807\x00-9223372036854775808\x004096"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m := model(bytes.Split(data, []byte{0}))
		lp := New(0)
		for _, s := range m {
			lp = Push(lp, s)
		}
		m.check(t, lp)
	})
}
