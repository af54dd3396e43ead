package shard

import "testing"

// TestReplicaKeepsExpired: in replica mode Lookup reports an expired key
// missing without deleting it (the primary's DEL does), except to the
// holder applying the primary's stream, and ExpireCycle deletes nothing;
// back in primary mode the key is deleted on lookup.
func TestReplicaKeepsExpired(t *testing.T) {
	st := NewStore(1, 16)
	key := []byte("k")
	sh, h := st.ShardOf(key)
	var expired [][]byte
	sh.OnExpire = func(db int, k []byte) { expired = append(expired, append([]byte(nil), k...)) }
	st.SetReplica(true)
	sh.Lock()
	defer sh.Unlock()
	sh.DB(0).Put(h, key, Value{Type: TypeString, Str: []byte("v"), ExpireAt: 1000})
	if _, ok := sh.Lookup(0, h, key, 999); !ok {
		t.Fatal("live key not found")
	}
	if _, ok := sh.Lookup(0, h, key, 1000); ok {
		t.Fatal("expired key found on a replica")
	}
	if _, ok := sh.DB(0).Find(h, key); !ok {
		t.Fatal("replica deleted an expired key on lookup")
	}
	if del, _ := sh.ExpireCycle(5000, 1, 20); del != 0 {
		t.Fatalf("replica's expire cycle deleted %d keys", del)
	}
	sh.SetPrimaryView(true)
	e, ok := sh.Lookup(0, h, key, 5000)
	if !ok {
		t.Fatal("the primary's command does not see a key the primary may still hold")
	}
	sh.DB(0).Delete(&e) // the primary's DEL
	sh.SetPrimaryView(false)
	if _, ok := sh.DB(0).Find(h, key); ok {
		t.Fatal("DEL from the primary left the key")
	}
	if len(expired) != 0 {
		t.Fatalf("replica reported expirations %q", expired)
	}

	sh.DB(0).Put(h, key, Value{Type: TypeString, Str: []byte("v"), ExpireAt: 1000})
	sh.Unlock()
	st.SetReplica(false)
	sh.Lock()
	if _, ok := sh.Lookup(0, h, key, 1000); ok {
		t.Fatal("expired key found")
	}
	if _, ok := sh.DB(0).Find(h, key); ok || len(expired) != 1 {
		t.Fatalf("primary kept an expired key (expired %q)", expired)
	}
}
