package aof

import (
	"bytes"
	"strings"
	"testing"
)

func TestManifestRoundTrip(t *testing.T) {
	in := "file appendonly.aof.2.base.rdb seq 2 type b\n" +
		"file appendonly.aof.1.incr.aof seq 1 type h\n" +
		"file appendonly.aof.3.incr.aof seq 3 type i\n" +
		"file appendonly.aof.4.incr.aof seq 4 type i\n"
	m, err := ParseManifest(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if m.Base == nil || m.Base.Name != "appendonly.aof.2.base.rdb" || m.BaseSeq != 2 || m.IncrSeq != 4 ||
		len(m.Incrs) != 2 || len(m.History) != 1 {
		t.Fatalf("parsed %+v", m)
	}
	if got := string(m.Marshal()); got != in {
		t.Fatalf("marshal:\n%s\nwant:\n%s", got, in)
	}
	if fi := m.NextIncr("appendonly.aof"); fi.Name != "appendonly.aof.5.incr.aof" || fi.Seq != 5 {
		t.Fatalf("next incr %+v", fi)
	}
	// Names that need quoting survive a round trip.
	q := &Manifest{Base: &FileInfo{Name: "my file\"x.1.base.rdb", Seq: 1, Type: TypeBase}}
	m2, err := ParseManifest(bytes.NewReader(q.Marshal()))
	if err != nil || m2.Base.Name != q.Base.Name {
		t.Fatalf("quoted name: %v %+v (%s)", err, m2, q.Marshal())
	}
}

func TestManifestErrors(t *testing.T) {
	for _, in := range []string{
		"",
		"file a seq 1 type b\nfile b seq 2 type b\n", // two bases
		"file a seq 2 type i\nfile b seq 2 type i\n", // not increasing
		"file a seq 1 type x\n",                      // unknown type
		"file ../a seq 1 type i\n",                   // a path
		"file a seq 1\n",                             // too few fields
		"file a seq 1 type i",                        // no newline
		"\n",                                         // empty line
		"file a seq 0 type i\n",                      // seq 0
		"file \"a seq 1 type i\n",                    // unbalanced quote
		"file a seq 1 type i\n" + strings.Repeat("x", 2000) + "\n",
	} {
		if m, err := ParseManifest(strings.NewReader(in)); err == nil {
			t.Errorf("%q: accepted as %+v", in, m)
		}
	}
	// Comments and unknown keys are fine.
	m, err := ParseManifest(strings.NewReader("# comment\nfile a.1.incr.aof seq 1 type i extra 7\n"))
	if err != nil || len(m.Incrs) != 1 {
		t.Fatalf("%+v %v", m, err)
	}
}

func FuzzManifest(f *testing.F) {
	f.Add([]byte("file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"))
	f.Add([]byte("file \"a\\x41 b\" seq 3 type h\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(bytes.NewReader(b))
		if err != nil || len(m.Marshal()) == 0 { // only comments
			return
		}
		// Whatever parses marshals to something that parses the same.
		m2, err := ParseManifest(bytes.NewReader(m.Marshal()))
		if err != nil {
			t.Fatalf("re-parse of %q: %v", m.Marshal(), err)
		}
		if !bytes.Equal(m.Marshal(), m2.Marshal()) {
			t.Fatalf("round trip changed %q to %q", m.Marshal(), m2.Marshal())
		}
	})
}
