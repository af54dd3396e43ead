package memcache

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/damselflydb/damselfly/shard"
)

// runInput feeds input to a fresh connection over a fresh store in the
// given pieces and returns everything it answered.
func runInput(t *testing.T, pieces ...[]byte) []byte {
	store := shard.NewStore(2, 16)
	defer store.Release()
	var log bytes.Buffer
	s := New(store, Config{MaxItemSize: 4096, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	defer func() {
		if log.Len() > 0 {
			t.Logf("server log:\n%s", log.String())
		}
	}()
	c := newConn(s, nil)
	// The clock stays fixed during a run (read after the store was made:
	// the shards' LRU clocks only move forward).
	c.now = time.Now().UnixMilli()
	for _, sh := range store.Shards() {
		sh.Lock()
		sh.Tick(c.now)
		sh.Unlock()
	}
	for _, p := range pieces {
		for len(p) > 0 {
			if c.w == len(c.in) {
				c.makeRoom()
			}
			n := copy(c.in[c.w:], p)
			c.w += n
			p = p[n:]
			if err := c.process(); err != nil || c.quit {
				return c.out // the connection would close here
			}
			if c.r == c.w {
				c.r, c.w = 0, 0
			}
		}
	}
	return c.out
}

// FuzzProtocol: no input makes a command panic (safely would turn it into
// SERVER_ERROR), and the parser is resumable: the same bytes split at any
// point give byte-identical replies (CAS uniques and the clock are
// deterministic here).
func FuzzProtocol(f *testing.F) {
	for _, seed := range []string{
		"set k 0 0 1\r\nx\r\nget k\r\ngets k\r\n",
		"set k 5 100 3 noreply\r\nabc\r\nappend k 0 0 2\r\nde\r\nprepend k 0 0 1\r\nz\r\nget k\r\n",
		"add a 0 0 1\r\n1\r\nincr a 5\r\ndecr a 10\r\nincr a 18446744073709551615\r\ntouch a 10\r\ngat 0 a\r\n",
		"cas k 0 0 1 1\r\nx\r\ndelete k\r\nflush_all\r\nversion\r\nverbosity 1\r\nstats\r\n",
		"ms k 2 T60 F5 I\r\nhi\r\nmg k v f t c s k h l O9\r\nmg k N30 R90 q\r\nmd k I T30\r\nmg k v\r\nma k D3 N0 J7\r\nmn\r\n",
		"mg nope N30 v c\r\nms k 3 C1 I\r\nabc\r\nmd k q\r\nma n MD\r\n",
		"set big 0 0 99999999\r\n",
		"set k 0 0 2\r\nabcd\r\nget " + string(bytes.Repeat([]byte("k "), 300)) + "\r\n",
		"bogus\r\n\r\nget\r\nset k\r\nmg\r\nms k x\r\nmd k zz\r\nquit\r\n",
	} {
		f.Add([]byte(seed), uint16(7))
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		if len(data) > 1<<16 {
			return
		}
		whole := runInput(t, data)
		if bytes.Contains(whole, []byte("SERVER_ERROR internal error")) {
			t.Fatalf("a command panicked on %q", data)
		}
		at := int(cut) % (len(data) + 1)
		split := runInput(t, data[:at], data[at:])
		if !bytes.Equal(steady(whole), steady(split)) {
			t.Fatalf("input %q split at %d answered\n%q\nbut whole\n%q", data, at, split, whole)
		}
	})
}

// steady drops the stats lines that differ between two runs (clock, CPU).
func steady(out []byte) []byte {
	var b []byte
	for _, line := range bytes.SplitAfter(out, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("STAT rusage_")) || bytes.HasPrefix(line, []byte("STAT time ")) ||
			bytes.HasPrefix(line, []byte("STAT uptime ")) || bytes.HasPrefix(line, []byte("STAT pid ")) {
			continue
		}
		b = append(b, line...)
	}
	return b
}
