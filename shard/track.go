package shard

// Hooks for client-side caching (CLIENT TRACKING) and CLIENT PAUSE.
//
// Invariants: the tracking hook is set and called only under the shard's
// lock. It is called before every change to a key that WATCH would see
// (DB.Put, Overwrite, Add, Delete, Modify, growth in place), expiry and
// eviction included since they delete through DB.Delete; FLUSHDB and
// SWAPDB are not reported key by key (the caller handles them). While no
// hook is set and nothing is watched, a change pays one length and one nil
// check.

// SetTrackHook installs (or, with nil, removes) the function told of every
// key about to change in this shard. Call it under the lock.
func (sh *Shard) SetTrackHook(f func(db int, key []byte)) { sh.watch.track = f }

// SetExpiryPaused stops (on) or resumes deleting expired keys: while paused,
// Lookup reports an expired key missing but leaves it in place and
// ExpireCycle deletes nothing, as Redis does during CLIENT PAUSE. Call it
// under the lock.
func (sh *Shard) SetExpiryPaused(on bool) { sh.expiryPaused = on }

// SetNoTouch makes Lookup leave access times alone (on) for the lock
// holder's command (CLIENT NO-TOUCH); call it under the lock, and again
// with false before unlocking.
func (sh *Shard) SetNoTouch(on bool) { sh.noTouch = on }
