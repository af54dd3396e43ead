package server

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// A busy script (issue 13): other clients wait, then get -BUSY after
// busy-reply-threshold; new connections are served meanwhile (no event
// loop is blocked); SCRIPT KILL and FUNCTION KILL stop it.
func TestBusyScript(t *testing.T) {
	s := startServer(t)
	ctl := dialRaw(t, s)
	ctl.do("CONFIG", "SET", "lua-time-limit", "300")
	if got := ctl.reply(); got[0] != "+OK" {
		t.Fatal(got)
	}
	ctl.do("CONFIG", "GET", "busy-reply-threshold")
	if got := ctl.reply(); strings.Join(got, " ") != "*2 $20 busy-reply-threshold $3 300" {
		t.Fatal(got)
	}
	// Clients connected before the script, on the event loops.
	var others []*rawConn
	for range 3 {
		r := dialRaw(t, s)
		r.do("SET", "k", "v")
		r.reply()
		others = append(others, r)
	}
	looper := dialRaw(t, s)
	looper.do("EVAL", "local i = 0 while true do i = i + 1 end", "0")
	waitBusy(t, s)

	start := time.Now()
	var wg sync.WaitGroup
	for _, r := range others {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.do("GET", "k")
		}()
	}
	wg.Wait()
	for _, r := range others {
		got := r.reply()
		if got[0] != "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE." {
			t.Fatalf("GET during a busy script: %q", got)
		}
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("BUSY took %v", d)
	}
	// New connections are accepted and answered; PING gets -BUSY.
	fresh := dialRaw(t, s)
	fresh.do("PING")
	if got := fresh.reply(); !strings.HasPrefix(got[0], "-BUSY ") {
		t.Fatal(got)
	}
	// A transaction that met BUSY is aborted.
	txc := dialRaw(t, s)
	txc.do("MULTI")
	txc.reply()
	txc.do("SET", "a", "b")
	txc.reply()
	txc.do("EXEC")
	if got := txc.reply(); !strings.HasPrefix(got[0], "-BUSY ") {
		t.Fatal(got)
	}
	fresh.do("FUNCTION", "KILL")
	if got := fresh.reply(); got[0] != "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE." {
		t.Fatal(got)
	}
	fresh.do("SCRIPT", "KILL")
	if got := fresh.reply(); got[0] != "+OK" {
		t.Fatal(got)
	}
	if got := looper.reply(); !strings.HasPrefix(got[0], "-ERR Script killed by user with SCRIPT KILL... script: ") {
		t.Fatal(got)
	}
	txc.do("EXEC")
	if got := txc.reply(); !strings.HasPrefix(got[0], "-EXECABORT") {
		t.Fatal(got)
	}
	for _, r := range append(others, fresh, looper) {
		r.do("GET", "k")
		if got := r.reply(); strings.Join(got, " ") != "$1 v" {
			t.Fatal(got)
		}
	}

	// A function: FUNCTION KILL, and SCRIPT KILL refused.
	ctl.do("FUNCTION", "LOAD", "#!lua name=spin\nredis.register_function{function_name='spin', callback=function() while true do end end, flags={'no-writes'}}")
	ctl.reply()
	looper.do("FCALL", "spin", "0")
	waitBusy(t, s)
	fresh.do("FUNCTION", "STATS")
	if got := fresh.reply(); len(got) < 8 || got[7] != "spin" {
		t.Fatalf("FUNCTION STATS while busy: %q", got)
	}
	time.Sleep(350 * time.Millisecond)
	fresh.do("GET", "k")
	if got := fresh.reply(); got[0] != "-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE." {
		t.Fatal(got)
	}
	fresh.do("SCRIPT", "KILL")
	if got := fresh.reply(); got[0] != "-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE." {
		t.Fatal(got)
	}
	fresh.do("FUNCTION", "KILL")
	if got := fresh.reply(); got[0] != "+OK" {
		t.Fatal(got)
	}
	if got := looper.reply(); !strings.HasPrefix(got[0], "-ERR Script killed by user with SCRIPT KILL... script: spin") {
		t.Fatal(got)
	}
}

// Before the threshold, a command waits for the script instead of failing.
func TestBusyScriptWaits(t *testing.T) {
	s := startServer(t)
	a, b := dialRaw(t, s), dialRaw(t, s)
	b.do("PING")
	b.reply()
	// Half a second by TIME's microseconds (waiting for the next whole
	// second could take a millisecond and end before waitBusy looks).
	a.do("EVAL", "redis.call('set','k','1') local function us() local t = redis.call('time') return t[1]*1000000 + t[2] end local t0 = us() while us() < t0 + 500000 do end redis.call('set','k','2') return 1", "0")
	waitBusy(t, s)
	b.do("GET", "k")
	if got := b.reply(); strings.Join(got, " ") != "$1 2" {
		t.Fatalf("GET after a 1-second script: %q", got)
	}
	if got := a.reply(); got[0] != ":1" {
		t.Fatal(got)
	}
}

// SHUTDOWN NOSAVE stops the server during a busy script that wrote.
func TestBusyScriptShutdownNoSave(t *testing.T) {
	s := startServer(t)
	a, b := dialRaw(t, s), dialRaw(t, s)
	b.do("CONFIG", "SET", "busy-reply-threshold", "100")
	b.reply()
	a.do("EVAL", "redis.call('set','k','1') while true do end", "0")
	waitBusy(t, s)
	for r := s.scripts.Busy(); r != nil && !r.Wrote(); r = s.scripts.Busy() {
		time.Sleep(time.Millisecond)
	}
	b.do("SCRIPT", "KILL")
	if got := b.reply(); !strings.HasPrefix(got[0], "-UNKILLABLE Sorry the script already executed write commands") {
		t.Fatal(got)
	}
	b.do("SHUTDOWN")
	if got := b.reply(); got[0] != "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE." {
		t.Fatal(got)
	}
	b.do("SHUTDOWN", "NOSAVE")
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SHUTDOWN NOSAVE during a busy script did not stop the server")
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs behind the busy script")
	}
}

// waitBusy waits until a script is running.
func waitBusy(t *testing.T, s *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for s.scripts.Busy() == nil {
		if ctx.Err() != nil {
			t.Fatal("the script did not start")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A script inside MULTI/EXEC is busy like any other.
func TestBusyScriptInExec(t *testing.T) {
	s := startServer(t)
	a, b := dialRaw(t, s), dialRaw(t, s)
	b.do("CONFIG", "SET", "busy-reply-threshold", "100")
	b.reply()
	a.do("MULTI")
	a.reply()
	a.do("SET", "k", "1")
	a.reply()
	a.do("EVAL", "while true do end", "0")
	a.reply()
	a.do("EXEC")
	waitBusy(t, s)
	b.do("GET", "k")
	if got := b.reply(); got[0] != "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE." {
		t.Fatal(got)
	}
	// The script itself wrote nothing, so it can be killed, as in Redis.
	b.do("SCRIPT", "KILL")
	if got := b.reply(); got[0] != "+OK" {
		t.Fatal(got)
	}
	if got := a.reply(); len(got) != 3 || got[1] != "+OK" || !strings.HasPrefix(got[2], "-ERR Script killed by user with SCRIPT KILL...") {
		t.Fatalf("EXEC: %q", got)
	}
	b.do("GET", "k")
	if got := b.reply(); strings.Join(got, " ") != "$1 1" {
		t.Fatal(got)
	}
}
