package server

import (
	"bytes"
	"testing"
)

// FuzzKeySpecs runs every table entry's key specs over arbitrary argument
// lists: extraction never panics and returns only arguments of the call,
// never the command name.
func FuzzKeySpecs(f *testing.F) {
	f.Add([]byte("EVAL\x00x\x003\x00k1\x00k2\x00k3"))
	f.Add([]byte("XREAD\x00COUNT\x002\x00STREAMS\x00a\x00b\x000\x000"))
	f.Add([]byte("MIGRATE\x00h\x00p\x00\x000\x001000\x00KEYS\x00a\x00b"))
	f.Add([]byte("ZUNIONSTORE\x00d\x00-1\x00a"))
	f.Add([]byte("SORT\x00k\x00STORE\x00d"))
	tb := buildCommandTable()
	tb.finish()
	f.Fuzz(func(t *testing.T, data []byte) {
		args := bytes.Split(data, []byte{0})
		if len(args) > 64 {
			args = args[:64]
		}
		for _, cmd := range tb.all {
			for _, k := range cmd.keys(args) {
				ok := false
				for _, a := range args[1:] {
					if len(a) == len(k) && (len(a) == 0 || &a[0] == &k[0]) {
						ok = true
						break
					}
				}
				if !ok {
					t.Fatalf("%s: key %q is not an argument of %q", cmd.name, k, args)
				}
			}
		}
	})
}
