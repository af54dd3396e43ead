package snapshot

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/snapshot/rdb"
)

// loadBatch is the number of keys handed to a shard's loader at once.
const loadBatch = 256

// Load reads an RDB file into st (all shards in parallel), dropping expired
// keys; on any error nothing is kept (the caller refuses to start) and the
// error names the file, offset and what was expected.
//
// One goroutine decodes and checks the file (rdb.Load: framing, limits,
// CRC64) and routes each key to its shard; one goroutine per shard builds
// the values and inserts them under the shard lock, a batch at a time.
// Load is meant for an empty store (start-up, DEBUG RELOAD, a replica's
// full sync): on error every database of st is emptied. Keys that cannot
// be represented (hash fields with their own TTL, a database
// index beyond st's) and duplicate keys are errors, so that a server never
// starts with part of its dump and later saves over the rest.
func Load(st *shard.Store, r io.Reader, name string) (Stats, error) {
	start := time.Now()
	nowMs := start.UnixMilli()
	shards := st.Shards()
	type batch []*rdb.Entry
	chans := make([]chan batch, len(shards))
	pending := make([]batch, len(shards))
	var (
		wg     sync.WaitGroup
		errMu  sync.Mutex
		werr   error
		stop   = make(chan struct{})
		failed sync.Once
	)
	fail := func(err error) {
		errMu.Lock()
		if werr == nil {
			werr = err
		}
		errMu.Unlock()
		failed.Do(func() { close(stop) })
	}
	var keys int64
	var keysMu sync.Mutex
	for i, sh := range shards {
		ch := make(chan batch, 4)
		chans[i] = ch
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n int64
			for b := range ch {
				sh.Lock()
				for _, e := range b {
					if err := insert(sh, e); err != nil {
						fail(fmt.Errorf("%s: %w", name, err))
						break
					}
					n++
				}
				sh.Unlock()
			}
			keysMu.Lock()
			keys += n
			keysMu.Unlock()
		}()
	}
	send := func(i int) bool {
		select {
		case chans[i] <- pending[i]:
			pending[i] = make(batch, 0, loadBatch)
			return true
		case <-stop:
			return false
		}
	}
	errStopped := errors.New("stopped")
	info, err := rdb.Load(bufio.NewReaderSize(r, 1<<20), name, func(e *rdb.Entry) error {
		if e.DB < 0 || e.DB >= st.DBNum() {
			return fmt.Errorf("%s: key %q is in DB %d, but only %d databases are configured (--dbnum)", name, e.Key, e.DB, st.DBNum())
		}
		if e.Expired(nowMs) {
			return nil
		}
		if e.HashFieldExpireAtMs != nil {
			return fmt.Errorf("%s: key %q (DB %d) is a hash with per-field TTLs, which Damselfly does not support", name, e.Key, e.DB)
		}
		_, h := st.ShardOf(e.Key)
		i := st.Route(e.Key, h)
		pending[i] = append(pending[i], e)
		if len(pending[i]) >= loadBatch && !send(i) {
			return errStopped
		}
		return nil
	})
	if err == nil {
		for i := range pending {
			if len(pending[i]) > 0 && !send(i) {
				break
			}
		}
	}
	for _, ch := range chans {
		close(ch)
	}
	wg.Wait()
	if err == nil || errors.Is(err, errStopped) {
		errMu.Lock()
		if werr != nil {
			err = werr
		}
		errMu.Unlock()
	}
	if err != nil {
		all := st.All()
		st.LockMany(&all)
		for _, sh := range shards {
			for db := 0; db < st.DBNum(); db++ {
				sh.FlushDB(db, true)
			}
		}
		st.UnlockMany(&all)
		return Stats{}, err
	}
	return Stats{Keys: keys, Bytes: info.Bytes, Duration: time.Since(start)}, nil
}

// insert stores one loaded key (shard locked).
func insert(sh *shard.Shard, e *rdb.Entry) error {
	h := shard.Hash(e.Key)
	d := sh.DB(e.DB)
	v, err := Value(e)
	if err != nil {
		return fmt.Errorf("key %q (DB %d): %w", e.Key, e.DB, err)
	}
	if v.Type != shard.TypeString && v.Obj == nil {
		// An empty collection is not stored, but a duplicate is still an error.
		if _, dup := d.Find(h, e.Key); dup {
			return fmt.Errorf("duplicate key %q in DB %d", e.Key, e.DB)
		}
		return nil
	}
	if !d.Add(h, e.Key, v) {
		return fmt.Errorf("duplicate key %q in DB %d", e.Key, e.DB)
	}
	return nil
}
