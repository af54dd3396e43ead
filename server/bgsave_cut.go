package server

// BGSAVE takes its snapshot at the instant the command runs, as Redis's
// fork does: the command waits (milliseconds) until the save goroutine is
// ready, then runs the cut itself, holding every shard, before it answers.
// So `SET k 1; BGSAVE; SET k 2` or `BGSAVE; FLUSHALL` dump k=1 and the data
// before the flush, and inside MULTI/EXEC the dump holds exactly the
// transaction's writes queued before BGSAVE.
//
// Before the cut the save may prepare a warm reserve of big chunks
// (snapshot/reserve.go: tens of ms when the store holds values of MBs), so
// BGSAVE runs off the event loops (x-detach): only its own connection
// waits. Inside EXEC, whose locks the command holds, there is none.
//
// The command must not wait for the store's snapshot slot while holding
// shards (another snapshot, an AOF rewrite or a full sync, needs them to
// finish), so it takes the slot without waiting and hands it to the save;
// when another snapshot runs, the save starts as before and cuts as soon as
// that one ends.

// cutInCommand carries the cut from the save goroutine to the command.
type cutInCommand struct {
	req chan func()
	// inTx: the command runs inside EXEC, holding its transaction's shard
	// locks while it waits for the save goroutine, which therefore must
	// not lock shards before the cut (no warm reserve, snapshot.Options).
	inTx bool
}

// locked reports whether the command holds shard locks while it waits.
func (ci *cutInCommand) locked() bool { return ci != nil && ci.inTx }

// runner is the snapshot.Options.RunCut of a save whose cut the command
// runs (nil: the save locks the shards itself).
func (ci *cutInCommand) runner() func(cut func()) {
	if ci == nil {
		return nil
	}
	return func(cut func()) {
		done := make(chan struct{})
		ci.req <- func() { cut(); close(done) }
		<-done
	}
}

// startBgsaveHere starts a background save whose cut is now.
func (c *Client) startBgsaveHere(reason string) error {
	s := c.srv
	if !s.store.TryAcquireSnapshot() {
		return s.startBgsave(reason)
	}
	prog, ctx, err := s.beginSave(true)
	if err != nil {
		s.store.ReleaseSnapshot()
		return err
	}
	ci := &cutInCommand{req: make(chan func()), inTx: c.sess.held != nil}
	ended := make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.endSave()
		defer close(ended)
		defer s.store.ReleaseSnapshot()
		_ = s.saveRDB(ctx, reason, prog, backgroundPace, ci)
	}()
	select {
	case cut := <-ci.req:
		set := c.lockAll() // held already inside EXEC: only the rest is locked
		cut()
		c.unlock(set)
	case <-ended: // failed before the cut (the log says why)
	}
	return nil
}
