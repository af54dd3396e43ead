package server

// Compatibility with kvrocks-controller's use of the CLUSTERX contract
// beyond what kvrocks documents.

import "time"

// controllerMigrateWait bounds how long CLUSTERX MIGRATE without a sync
// flag waits before its +OK. kvrocks-controller up to v0.3 checks
// migrating_state once a second after the call and aborts its task when
// the state is still "start" (it only knows success and failure), leaving
// the slot handed over on the nodes but not in its topology. Answering
// once the migration ended, or after this bound, keeps a slot that moves
// in under two seconds out of that window; it stays below the
// controller's three-second read timeout. "async" answers at once.
const controllerMigrateWait = 2 * time.Second

// migrateDefaultReply answers a CLUSTERX MIGRATE that named no sync flag:
// +OK (the outcome is migrating_state's, as for async) once done reports
// the end of the migration or the bound passes.
func (c *Client) migrateDefaultReply(done <-chan error) {
	t := time.NewTimer(controllerMigrateWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-c.srv.done:
	}
	c.ok()
}
