package server

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestBigStringsGrowInPlace extends big strings many times with APPEND,
// SETRANGE past the end, SETBIT and BITFIELD (the path that grows a large
// value in place) and checks every value and its TTL against a model.
func TestBigStringsGrowInPlace(t *testing.T) {
	s := startServer(t)
	rdb := newClient(t, s)
	ctx := context.Background()
	model := map[string][]byte{}
	set := func(k string, v []byte) {
		model[k] = v
		if err := rdb.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	big := bytes.Repeat([]byte("x"), 20000)
	set("a", bytes.Clone(big))
	set("r", bytes.Clone(big))
	set("b", bytes.Clone(big))
	rdb.Expire(ctx, "a", time.Hour)
	pipe := rdb.Pipeline()
	for i := 0; i < 2000; i++ {
		chunk := strings.Repeat(string(rune('a'+i%26)), 1+i%37)
		pipe.Append(ctx, "a", chunk)
		model["a"] = append(model["a"], chunk...)
		off := len(model["r"]) + i%5
		pipe.SetRange(ctx, "r", int64(off), chunk)
		model["r"] = append(model["r"], make([]byte, off+len(chunk)-len(model["r"]))...)
		copy(model["r"][off:], chunk)
		bit := int64(len(model["b"])*8 + i%9)
		pipe.SetBit(ctx, "b", bit, 1)
		for int64(len(model["b"])) <= bit/8 {
			model["b"] = append(model["b"], 0)
		}
		model["b"][bit/8] |= 0x80 >> (bit % 8)
	}
	pipe.Do(ctx, "BITFIELD", "b", "SET", "u16", int64(len(model["b"])*8+3), 0xffff)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	end := len(model["b"])*8 + 3
	for len(model["b"]) < (end+16+7)/8 {
		model["b"] = append(model["b"], 0)
	}
	for i := 0; i < 16; i++ {
		model["b"][(end+i)/8] |= 0x80 >> ((end + i) % 8)
	}
	for k, want := range model {
		got, err := rdb.Get(ctx, k).Bytes()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes, want %d (err %v)", k, len(got), len(want), err)
		}
	}
	if ttl := rdb.TTL(ctx, "a").Val(); ttl <= 0 {
		t.Fatalf("APPEND lost the TTL: %v", ttl)
	}
}
