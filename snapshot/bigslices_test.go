package snapshot

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/shard"
)

// TestBigStringCopiedInSlices: a paced save writes a big string straight
// from the shard's bytes sliceBytes at a time and yields to clients between slices
// (writeBig). Writers that change the value in place between two slices
// (Unshare), append to it, or overwrite it must not reach the dump: it
// holds the value as it was at the cut, byte for byte.
func TestBigStringCopiedInSlices(t *testing.T) {
	const size = 8*sliceBytes + 12345
	for _, op := range []string{"modify", "grow", "overwrite"} {
		t.Run(op, func(t *testing.T) {
			st := shard.NewStore(1, 1)
			orig := bytes.Repeat([]byte("0123456789abcdef"), size/16)
			put(st, 0, "big", shard.Value{Type: shard.TypeString, Str: orig})
			put(st, 0, "small", shard.Value{Type: shard.TypeString, Str: []byte("v")})
			want := contents(st, time.Now().UnixMilli(), true)
			k := []byte("big")
			sh, h := st.ShardOf(k)
			changes := 0
			busy := func() bool {
				if !calledFrom("writeBig") {
					return false
				}
				// The encoder pauses between two slices, it.mu unlocked.
				sh.Lock()
				defer sh.Unlock()
				d := sh.DB(0)
				e, ok := sh.Lookup(0, h, k, time.Now().UnixMilli())
				if !ok {
					t.Fatal("big key gone")
				}
				switch op {
				case "modify":
					p := d.ModifyStr(&e)
					p[changes%len(p)], p[len(p)-1-changes] = 'X', 'Y'
				case "grow":
					if g, w, grown := d.GrowString(&e, len(e.Str())+1000); grown {
						p := g.StrW(w)
						p[0], p[len(p)-1] = 'G', 'G'
					}
				case "overwrite":
					d.Put(h, k, shard.Value{Type: shard.TypeString, Str: bytes.Repeat([]byte{'N'}, size)})
				}
				changes++
				return true
			}
			data, _ := save(t, st, Options{Pace: 1, Busy: busy})
			if changes < 8 {
				t.Fatalf("the encoder asked whether clients wait %d times, want once after each of its first 8 slices", changes)
			}
			got := contents(load(t, data, 1), time.Now().UnixMilli(), true)
			compareContents(t, want, got)
			t.Logf("%d changes during the copy", changes)
		})
	}
}

// calledFrom reports whether a function whose name ends with name is on
// the caller's stack.
func calledFrom(name string) bool {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, name) {
			return true
		}
		if !more {
			return false
		}
	}
}
