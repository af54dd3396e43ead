package shard

// Adopt replaces every database of sh with those of src, which must not be
// used afterwards: a dataset loaded off to the side (a replica's full sync)
// is installed at once, so the previous one serves until the new one is
// complete. The caller holds sh's lock; src is private to the caller.
//
// The previous databases are released in the background, unless a running
// snapshot still reads them (it releases them when it finishes, as after a
// flush). The adopted tables stamp changes with sh's epoch, like a new DB.
func (sh *Shard) Adopt(src *Shard) {
	for i := range sh.dbs {
		if d := sh.dbs[i]; d != nil && !sh.snap.pinned(d) {
			go d.release()
		}
		var nd *DB
		if i < len(src.dbs) {
			nd = src.dbs[i]
			src.dbs[i] = nil
		}
		if nd != nil {
			nd.dirty, nd.clock, nd.watch = &sh.dirty, &sh.clock, &sh.watch
			nd.main.SetVersion(sh.epoch)
			nd.expires.SetVersion(sh.epoch)
			if i == 0 && sh.slotIndexed && nd.slots == nil {
				nd.buildSlotIndex()
			}
		}
		sh.dbs[i] = nd
	}
	sh.dirty++
}
