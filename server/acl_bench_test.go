package server

import (
	"strconv"
	"syscall"
	"testing"
)

// cpuNs is the process's user+system CPU time: benchmarks report CPU per
// operation (cpu-ns/op) besides wall time, which a loaded machine inflates.
func cpuNs() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func reportCPU(b *testing.B, start int64) {
	b.ReportMetric(float64(cpuNs()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkACLCheck measures the request path (parse, dispatch with the
// ACL check, GET or SET, reply) for the default user, whose check is the
// fast path, and for a restricted user whose check finds the keys from
// the key specs and matches them against a pattern. See BENCHMARKS.md.
func BenchmarkACLCheck(b *testing.B) {
	for _, cmd := range []string{"GET", "SET"} {
		for _, user := range []string{"default", "restricted"} {
			b.Run(cmd+"/"+user, func(b *testing.B) {
				c := benchClient(b)
				if _, _, err := c.srv.acl.users.SetUser("bench", []string{"on", "nopass", "-@all", "+get", "+set", "~key:*"}); err != nil {
					b.Fatal(err)
				}
				c.user.Store(c.srv.acl.users.Get(user))
				if user == "restricted" {
					c.user.Store(c.srv.acl.users.Get("bench"))
				}
				reqs := make([][]byte, 1000)
				for i := range reqs {
					k := "key:" + strconv.Itoa(i)
					c.execute([][]byte{[]byte("SET"), []byte(k), []byte("v")})
					if cmd == "SET" {
						reqs[i] = []byte(encode("SET", k, "v"))
					} else {
						reqs[i] = []byte(encode("GET", k))
					}
				}
				c.out = c.out[:0]
				b.ReportAllocs()
				b.ResetTimer()
				defer reportCPU(b, cpuNs())
				for i := 0; i < b.N; i++ {
					c.r, c.w = 0, copy(c.in, reqs[i%len(reqs)])
					if err := c.processInput(); err != nil {
						b.Fatal(err)
					}
					if len(c.out) > 0 && c.out[0] == '-' {
						b.Fatalf("%s", c.out)
					}
					c.out = c.out[:0]
				}
			})
		}
	}
}

// BenchmarkACLCheckOnly is the check alone for a restricted user's GET and
// SET (keys from the key specs, one pattern to match).
func BenchmarkACLCheckOnly(b *testing.B) {
	c := benchClient(b)
	u, _, err := c.srv.acl.users.SetUser("bench", []string{"on", "nopass", "-@all", "+get", "+set", "~key:*"})
	if err != nil {
		b.Fatal(err)
	}
	c.user.Store(u)
	for _, args := range [][][]byte{{[]byte("get"), []byte("key:1234")}, {[]byte("set"), []byte("key:1234"), []byte("v")}} {
		cmd := c.srv.cmds[string(args[0])]
		b.Run(string(args[0]), func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b, cpuNs())
			for i := 0; i < b.N; i++ {
				if c.aclDenied(cmd, args) {
					b.Fatal("denied")
				}
			}
		})
	}
	b.Run("default", func(b *testing.B) {
		c.user.Store(c.srv.acl.def)
		cmd := c.srv.cmds["get"]
		args := [][]byte{[]byte("get"), []byte("key:1234")}
		defer reportCPU(b, cpuNs())
		for i := 0; i < b.N; i++ {
			if c.aclDenied(cmd, args) {
				b.Fatal("denied")
			}
		}
	})
}
