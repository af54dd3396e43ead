package server

import (
	"strings"
	"testing"
	"time"
)

// TestXReadGroupKeyDeleted: a client blocked in XREADGROUP gets
// "-UNBLOCKED the stream key no longer exists" when DEL or UNLINK removes
// its stream, and a plain XREAD stays blocked until an XADD; checked on
// Damselfly and on redis-server alike (found by difftest).
func TestXReadGroupKeyDeleted(t *testing.T) {
	s := startServer(t)
	addrs := map[string]string{"damselfly": s.Addr()}
	if testing.Short() {
		t.Log("short: Damselfly only")
	} else {
		addrs["redis"] = startRedis(t)
	}
	for name, addr := range addrs {
		t.Run(name, func(t *testing.T) {
			ctl, a, b := dialAddr(t, addr), dialAddr(t, addr), dialAddr(t, addr)
			ctl.do("FLUSHALL")
			ctl.reply()
			for _, del := range []string{"DEL", "UNLINK"} {
				ctl.do("XGROUP", "CREATE", "xs", "g1", "$", "MKSTREAM")
				ctl.reply()
				a.do("XREADGROUP", "GROUP", "g1", "c1", "BLOCK", "0", "STREAMS", "xs", ">")
				b.do("XREAD", "BLOCK", "0", "STREAMS", "xs", "$")
				time.Sleep(100 * time.Millisecond)
				ctl.do(del, "xs")
				if got := strings.Join(ctl.reply(), " "); got != ":1" {
					t.Fatalf("%s: %s", del, got)
				}
				if got := strings.Join(a.reply(), " "); got != "-UNBLOCKED the stream key no longer exists" {
					t.Fatalf("XREADGROUP after %s: %q", del, got)
				}
				ctl.do("XADD", "xs", "1-1", "f", "v")
				ctl.reply()
				if got := strings.Join(b.reply(), " "); !strings.Contains(got, "1-1") {
					t.Fatalf("XREAD after %s and XADD: %q", del, got)
				}
				ctl.do("DEL", "xs")
				ctl.reply()
			}
		})
	}
}
