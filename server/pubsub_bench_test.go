package server

import (
	"io"
	"net"
	"testing"
)

// benchSubscriber is a connection-less client subscribed through the
// ordinary command path, its queued output drained into io.Discard over a
// net.Pipe.
func benchSubscriber(b *testing.B, s *Server, id int64, args ...string) *Client {
	here, there := net.Pipe()
	go func() { _, _ = io.Copy(io.Discard, there) }()
	c := &Client{srv: s, id: id, nc: here, in: make([]byte, readBufSize), p: newParser(), proto: 2, authed: true}
	c.p.Authed = true
	a := make([][]byte, len(args))
	for i, x := range args {
		a[i] = []byte(x)
	}
	c.execute(a)
	c.flushToQueue()
	b.Cleanup(func() {
		c.unsubscribeAll()
		c.sess.outq.stop()
		here.Close()
		there.Close()
	})
	return c
}

// benchPublish measures PUBLISH news hello through the request path with
// the given subscribers (one client each).
func benchPublish(b *testing.B, subs ...[]string) {
	c := benchClient(b)
	for i, a := range subs {
		benchSubscriber(b, c.srv, int64(i+2), a...)
	}
	req := []byte(encode("PUBLISH", "news", "hello"))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.r, c.w = 0, copy(c.in, req)
		if err := c.processInput(); err != nil {
			b.Fatal(err)
		}
		c.out = c.out[:0]
	}
}

// Run with -benchmem: the cost of one PUBLISH request with nobody
// listening, one channel subscriber, and a channel plus a pattern
// subscriber (the patterns that do not match are the cost of the scan).
func BenchmarkPublishNoSubscribers(b *testing.B) { benchPublish(b) }
func BenchmarkPublishOneSubscriber(b *testing.B) {
	benchPublish(b, []string{"SUBSCRIBE", "news"})
}
func BenchmarkPublishChannelAndPatterns(b *testing.B) {
	benchPublish(b, []string{"SUBSCRIBE", "news"}, []string{"PSUBSCRIBE", "n*"}, []string{"PSUBSCRIBE", "other.*", "x?y", "[a-m]*"})
}
