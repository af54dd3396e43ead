package server

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Many subscribers on channels and patterns each get every message once, in
// publishing order.
func TestPubSubFanOut(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	const subs, msgs = 40, 200
	var wg sync.WaitGroup
	errs := make(chan error, subs)
	ready := make(chan struct{}, subs)
	for i := 0; i < subs; i++ {
		rdb := newClient(t, s)
		var ps *redis.PubSub
		if i%2 == 0 {
			ps = rdb.Subscribe(ctx, "news")
		} else {
			ps = rdb.PSubscribe(ctx, "n*s")
		}
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func(i int, ps *redis.PubSub) {
			defer wg.Done()
			defer ps.Close()
			ready <- struct{}{}
			for j := 0; j < msgs; j++ {
				m, err := ps.ReceiveMessage(ctx)
				if err != nil {
					errs <- err
					return
				}
				if m.Payload != fmt.Sprint(j) || m.Channel != "news" {
					errs <- fmt.Errorf("subscriber %d: message %d is %q on %q", i, j, m.Payload, m.Channel)
					return
				}
				if i%2 == 1 && m.Pattern != "n*s" {
					errs <- fmt.Errorf("pattern %q", m.Pattern)
					return
				}
			}
		}(i, ps)
	}
	for i := 0; i < subs; i++ {
		<-ready
	}
	pub := newClient(t, s)
	info := pub.Info(ctx, "stats").Val()
	if !strings.Contains(info, "pubsub_channels:1\r\n") || !strings.Contains(info, "pubsub_patterns:1\r\n") {
		t.Errorf("INFO stats lacks the pubsub counts:\n%s", info)
	}
	if n := pub.PubSubNumSub(ctx, "news").Val()["news"]; n != subs/2 {
		t.Errorf("NUMSUB = %d", n)
	}
	if n := pub.PubSubNumPat(ctx).Val(); n != 1 {
		t.Errorf("NUMPAT = %d", n)
	}
	for j := 0; j < msgs; j++ {
		n, err := pub.Publish(ctx, "news", fmt.Sprint(j)).Result()
		if err != nil || n != subs {
			t.Fatalf("PUBLISH = %d, %v; want %d", n, err, subs)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// RESP3: confirmations and messages are pushes; a client may run any
// command while subscribed and receives its own message before PUBLISH's reply.
func TestPubSubRESP3(t *testing.T) {
	s := startServer(t)
	r := dialRaw(t, s)
	r.do("HELLO", "3")
	r.reply()
	r.do("SUBSCRIBE", "ch")
	want(t, r.reply(), ">3", "$9", "subscribe", "$2", "ch", ":1")
	r.do("SET", "k", "v")
	want(t, r.reply(), "+OK")
	r.do("PUBLISH", "ch", "hi")
	want(t, r.reply(), ">3", "$7", "message", "$2", "ch", "$2", "hi")
	want(t, r.reply(), ":1")
	r.do("UNSUBSCRIBE")
	want(t, r.reply(), ">3", "$11", "unsubscribe", "$2", "ch", ":0")
	r.do("PING")
	want(t, r.reply(), "+PONG")

	// A RESP2 subscriber gets arrays; another connection publishes.
	sub := dialRaw(t, s)
	sub.do("PSUBSCRIBE", "h[ae]llo")
	want(t, sub.reply(), "*3", "$10", "psubscribe", "$8", "h[ae]llo", ":1")
	r.do("PUBLISH", "hello", "x")
	want(t, r.reply(), ":1")
	r.do("PUBLISH", "hillo", "x")
	want(t, r.reply(), ":0")
	want(t, sub.reply(), "*4", "$8", "pmessage", "$8", "h[ae]llo", "$5", "hello", "$1", "x")
	sub.do("QUIT")
	want(t, sub.reply(), "+OK")
}

func want(t *testing.T, got []string, w ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(w, "\n") {
		t.Fatalf("got %q, want %q", got, w)
	}
}

// A subscriber that never reads is disconnected once its pending output
// passes the pubsub hard limit; the publisher never blocks and server
// memory stays bounded.
func TestPubSubSlowSubscriber(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	pub := newClient(t, s)
	if err := pub.ConfigSet(ctx, "client-output-buffer-limit", "pubsub 4mb 1mb 60").Err(); err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetReadBuffer(4096)
	}
	nc.Write([]byte("*2\r\n$9\r\nSUBSCRIBE\r\n$4\r\nslow\r\n"))
	for pub.PubSubNumSub(ctx, "slow").Val()["slow"] != 1 {
		time.Sleep(time.Millisecond)
	}
	payload := strings.Repeat("x", 16<<10)
	start := time.Now()
	sent := 0
	for pub.PubSubNumSub(ctx, "slow").Val()["slow"] == 1 {
		for i := 0; i < 32; i++ {
			if err := pub.Publish(ctx, "slow", payload).Err(); err != nil {
				t.Fatal(err)
			}
			sent += len(payload)
		}
		if sent > 256<<20 || time.Since(start) > 20*time.Second {
			t.Fatalf("slow subscriber not disconnected after %d MB", sent>>20)
		}
	}
	// Everything the server held for it was at most the hard limit plus
	// what the kernel buffers took.
	if sent > 64<<20 {
		t.Errorf("disconnected only after %d MB", sent>>20)
	}
	for i := 0; i < 100 && len(s.clientList()) > 1; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(s.clientList()); n != 1 {
		t.Errorf("%d clients still connected", n)
	}
}
