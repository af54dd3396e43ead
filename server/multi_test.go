package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Transfers between keys on different shards inside MULTI/EXEC, and
// WATCH/GET/MULTI/SET loops, from many clients at once: totals stay exact
// and no transaction is seen half done.
func TestMultiAtomicity(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	const accounts, clients, rounds = 8, 8, 150
	keys := make([]string, accounts)
	admin := newClient(t, s)
	for i := range keys {
		keys[i] = fmt.Sprintf("acct:%d", i)
		admin.Set(ctx, keys[i], 1000, 0)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*clients)
	for w := 0; w < clients; w++ {
		rdb := newClient(t, s)
		wg.Add(2)
		go func(w int) { // MULTI/EXEC transfers
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				from, to := keys[(w+r)%accounts], keys[(w+3*r+1)%accounts]
				if from == to {
					continue
				}
				_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.DecrBy(ctx, from, 7)
					p.IncrBy(ctx, to, 7)
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}(w)
		go func(w int) { // WATCH-based read-modify-write of a counter
			defer wg.Done()
			rdb := newClient(t, s)
			for r := 0; r < rounds/3; r++ {
				for {
					err := rdb.Watch(ctx, func(tx *redis.Tx) error {
						n, err := tx.Get(ctx, "counter").Int()
						if err != nil && err != redis.Nil {
							return err
						}
						_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
							p.Set(ctx, "counter", n+1, 0)
							return nil
						})
						return err
					}, "counter")
					if err == nil {
						break
					}
					if !errors.Is(err, redis.TxFailedErr) {
						errs <- err
						return
					}
				}
			}
		}(w)
	}
	// A reader checks that every snapshot taken by MULTI sums exactly.
	done := make(chan struct{})
	var rwg sync.WaitGroup
	rwg.Add(1)
	go func() {
		defer rwg.Done()
		rdb := newClient(t, s)
		for {
			select {
			case <-done:
				return
			default:
			}
			cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				for _, k := range keys {
					p.Get(ctx, k)
				}
				return nil
			})
			if err != nil {
				errs <- err
				return
			}
			sum := 0
			for _, c := range cmds {
				n, _ := strconv.Atoi(c.(*redis.StringCmd).Val())
				sum += n
			}
			if sum != accounts*1000 {
				errs <- fmt.Errorf("MULTI snapshot sums to %d", sum)
				return
			}
		}
	}()
	wg.Wait()
	close(done)
	rwg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sum := 0
	for _, k := range keys {
		n, _ := admin.Get(ctx, k).Int()
		sum += n
	}
	if sum != accounts*1000 {
		t.Errorf("total %d, want %d", sum, accounts*1000)
	}
	if n, _ := admin.Get(ctx, "counter").Int(); n != clients*(rounds/3) {
		t.Errorf("counter %d, want %d", n, clients*(rounds/3))
	}
}

// A write from another client to a watched key fails EXEC.
func TestWatchOtherClient(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	a, b := newClient(t, s), newClient(t, s)
	a.Set(ctx, "k", "1", 0)
	err := a.Watch(ctx, func(tx *redis.Tx) error {
		b.Set(ctx, "k", "2", 0)
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "k", "3", 0)
			return nil
		})
		return err
	}, "k")
	if !errors.Is(err, redis.TxFailedErr) {
		t.Fatalf("EXEC after a concurrent write: %v", err)
	}
	if v := a.Get(ctx, "k").Val(); v != "2" {
		t.Errorf("k = %q", v)
	}
	// RENAME onto a watched key, and DEL of it, count too.
	for _, change := range []func(){
		func() { b.Set(ctx, "src", "x", 0); b.Rename(ctx, "src", "k") },
		func() { b.Del(ctx, "k") },
	} {
		err := a.Watch(ctx, func(tx *redis.Tx) error {
			change()
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Get(ctx, "k"); return nil })
			return err
		}, "k")
		if !errors.Is(err, redis.TxFailedErr) {
			t.Errorf("EXEC after change: %v", err)
		}
	}
}

// EXEC's writes reach the journal as MULTI ... EXEC (several) or alone (one).
func TestExecJournal(t *testing.T) {
	var mu sync.Mutex
	var got []string
	// The hook is installed before Start: the connection's goroutine or
	// event loop reads s.journal.
	s := startServerPrepared(t, func(s *Server) {
		inner := s.journal
		s.journal = func(db int, args [][]byte) int64 {
			mu.Lock()
			defer mu.Unlock()
			defer inner(db, args)
			line := fmt.Sprint(db)
			for _, a := range args {
				line += " " + string(a)
			}
			got = append(got, line)
			return 0
		}
	})
	r := dialRaw(t, s)
	for _, cmd := range [][]string{{"MULTI"}, {"SET", "a", "1"}, {"GET", "a"}, {"SELECT", "2"}, {"INCR", "b"}, {"EXEC"},
		{"MULTI"}, {"SET", "c", "1"}, {"GET", "c"}, {"EXEC"}} {
		r.do(cmd...)
		r.reply()
	}
	r.do("EVAL", "redis.call('set', KEYS[1], 'x'); redis.call('del', KEYS[1]); return 1", "1", "z")
	want(t, r.reply(), ":1")
	want := "[0 MULTI 0 SET a 1 2 INCR b 2 EXEC 2 SET c 1 2 MULTI 2 set z x 2 del z 2 EXEC]"
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(got) != want {
		t.Errorf("journal\n got %v\nwant %s", got, want)
	}
}
