package server

import (
	"strings"
	"testing"
	"time"
)

// blockedWrongTypeScenario is issue 13's reproduction, run against any
// server: a client blocked in a move whose destination is not a list gets
// WRONGTYPE when the source fills, the element stays, and the next blocked
// client in line is served.
func blockedWrongTypeScenario(t *testing.T, addr string) {
	for _, tc := range []struct {
		name  string
		block []string // the blocked command, waiting on blist
	}{
		{"BRPOPLPUSH", []string{"BRPOPLPUSH", "blist", "target", "0"}},
		{"BLMOVE", []string{"BLMOVE", "blist", "target", "LEFT", "RIGHT", "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctl := dialAddr(t, addr)
			ctl.do("FLUSHALL")
			ctl.reply()
			ctl.do("SET", "target", "nolist")
			ctl.reply()
			a := dialAddr(t, addr)
			a.do(tc.block...)
			waitBlockedRaw(t, ctl, 1) // A first in line, whatever the scheduling
			b := dialAddr(t, addr)
			b.do("BLPOP", "blist", "0") // second in line
			waitBlockedRaw(t, ctl, 2)
			ctl.do("RPUSH", "blist", "foo")
			if got := ctl.reply(); got[0] != ":1" {
				t.Fatalf("RPUSH: %q", got)
			}
			if got := a.reply(); !strings.HasPrefix(got[0], "-WRONGTYPE") {
				t.Fatalf("A got %q, want WRONGTYPE", got)
			}
			if got := strings.Join(b.reply(), " "); got != "*2 $5 blist $3 foo" {
				t.Fatalf("B got %q, want blist foo", got)
			}
			// Source already non-empty: WRONGTYPE at once, nothing moved.
			ctl.do("RPUSH", "blist", "bar")
			ctl.reply()
			args := append([]string(nil), tc.block...)
			args[len(args)-1] = "1"
			a.do(args...)
			if got := a.reply(); !strings.HasPrefix(got[0], "-WRONGTYPE") {
				t.Fatalf("A (source non-empty) got %q, want WRONGTYPE", got)
			}
			ctl.do("LRANGE", "blist", "0", "-1")
			if got := strings.Join(ctl.reply(), " "); got != "*1 $3 bar" {
				t.Fatalf("blist: %q", got)
			}
		})
	}
	t.Run("BLMPOP", func(t *testing.T) {
		ctl := dialAddr(t, addr)
		ctl.do("FLUSHALL")
		ctl.reply()
		ctl.do("SET", "str", "x")
		ctl.reply()
		a := dialAddr(t, addr)
		a.do("BLMPOP", "1", "2", "str", "blist", "LEFT")
		if got := a.reply(); !strings.HasPrefix(got[0], "-WRONGTYPE") {
			t.Fatalf("BLMPOP over a string key got %q, want WRONGTYPE", got)
		}
		a.do("BLMPOP", "0", "1", "blist", "LEFT")
		waitBlockedRaw(t, ctl, 1)
		ctl.do("RPUSH", "blist", "foo")
		ctl.reply()
		if got := strings.Join(a.reply(), " "); got != "*2 $5 blist *1 $3 foo" {
			t.Fatalf("BLMPOP got %q", got)
		}
	})
}

func waitBlockedRaw(t *testing.T, ctl *rawConn, n int) {
	t.Helper()
	want := "blocked_clients:" + itoa(int64(n))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		ctl.do("INFO", "clients")
		if strings.Contains(strings.Join(ctl.reply(), "\n"), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("never reached %s", want)
		}
	}
}

func TestBlockedWrongType(t *testing.T) {
	blockedWrongTypeScenario(t, startServer(t).Addr())
}

func TestBlockedWrongTypeAgainstRedis(t *testing.T) {
	blockedWrongTypeScenario(t, startRedis(t))
}
