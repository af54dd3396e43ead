package server

// argArena copies argument vectors into storage reused from one
// transaction to the next. A transaction's queued commands, and the writes
// EXEC or a script captures for the journal, must outlive the input buffer
// they came from; copying each into fresh slices was most of MULTI/EXEC's
// garbage (two allocations per command, twice).
//
// Views returned by copy stay valid until reset: when a chunk is full a new
// one is started and the old one stays referenced by the views into it.
type argArena struct {
	chunk []byte
	argv  [][]byte
}

// keepArena bounds what reset keeps for the next transaction.
const keepArena = 64 << 10

// copy stores a copy of args and returns a view of it.
func (a *argArena) copy(args [][]byte) [][]byte {
	n := 0
	for _, x := range args {
		n += len(x)
	}
	if cap(a.chunk)-len(a.chunk) < n {
		a.chunk = make([]byte, 0, max(2*cap(a.chunk), n, 512))
	}
	if cap(a.argv)-len(a.argv) < len(args) {
		a.argv = make([][]byte, 0, max(2*cap(a.argv), len(args), 16))
	}
	start := len(a.argv)
	for _, x := range args {
		off := len(a.chunk)
		a.chunk = append(a.chunk, x...)
		a.argv = append(a.argv, a.chunk[off:len(a.chunk):len(a.chunk)])
	}
	return a.argv[start:len(a.argv):len(a.argv)]
}

// reset forgets every copy (their views must no longer be used) and keeps
// the current storage for reuse unless it grew large.
func (a *argArena) reset() {
	if cap(a.chunk) > keepArena {
		a.chunk = nil
	}
	a.chunk = a.chunk[:0]
	if cap(a.argv) > keepArena/8 {
		a.argv = nil
	}
	clear(a.argv[:cap(a.argv)]) // drop references into dropped chunks
	a.argv = a.argv[:0]
}
