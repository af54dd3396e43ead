package server

import (
	"testing"
	"time"
)

// TestAOFReplica: a replica with appendonly yes logs the full sync (as a
// new base) and every write it applies from its primary; restarted alone
// from its AOF it holds the primary's dataset.
func TestAOFReplica(t *testing.T) {
	p := startServer(t, func(c *Config) { c.Save = "" })
	prc := newClient(t, p)
	aofWorkload(t, prc, "before")
	dir := t.TempDir()
	r := startServer(t, aofOn(dir, "everysec"), func(c *Config) { c.Save = ""; c.ReplicaOf = p.Addr() })
	rrc := newClient(t, r)
	aofWorkload(t, prc, "after")
	want := digestOf(t, prc)
	deadline := time.Now().Add(10 * time.Second)
	for digestOf(t, rrc) != want {
		if time.Now().After(deadline) {
			t.Fatal("replica did not catch up")
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitRewrite(t, rrc)
	r.Close()
	r2 := startServer(t, aofOn(dir, "everysec"))
	if got := digestOf(t, newClient(t, r2)); got != want {
		t.Fatalf("replica's AOF holds digest %s, the primary %s", got, want)
	}
}
