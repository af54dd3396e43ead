package memcache

// Observation of the commands a connection runs (Config.Observe), so that
// the server can show memcached traffic in its Redis-side statistics
// (INFO commandstats and latencystats, SLOWLOG, LATENCY, MONITOR).
//
// Invariants:
//   - One report per command that ran, after its reply is buffered: a
//     storage command (set, add, ..., cas, ms) when its data block arrived
//     and was applied, every other known command when it was answered.
//     quit and unknown commands are not reported. A command refused
//     because this node does not serve its keys (cluster mode) is reported
//     as Rejected and did not run.
//   - Cost while observed: one monotonic clock read per command. Within
//     one batch of requests read together (process), the end of one
//     command is the start of the next; a batch's first command reads the
//     clock afresh. A storage command's line is a view of the input buffer
//     while its data block arrives in the same batch, and is copied (into
//     a reused per-connection buffer) only when the batch ends before the
//     block came (the input buffer may then move). Unobserved (Observe
//     nil), one nil check.

import (
	"bytes"
	"net"
	"time"
)

// Cmd names a memcached command for an Observer.
type Cmd uint8

// The commands an Observer hears of.
const (
	CmdGet Cmd = iota
	CmdGets
	CmdGat
	CmdGats
	CmdSet
	CmdAdd
	CmdReplace
	CmdAppend
	CmdPrepend
	CmdCas
	CmdIncr
	CmdDecr
	CmdDelete
	CmdTouch
	CmdMg
	CmdMs
	CmdMd
	CmdMa
	CmdMn
	CmdStats
	CmdFlushAll
	CmdVersion
	CmdVerbosity
	NumCmds
	cmdNone = NumCmds
)

// String is the command's protocol name ("get", "flush_all", "mg").
func (c Cmd) String() string {
	switch c {
	case CmdGet:
		return "get"
	case CmdGets:
		return "gets"
	case CmdGat:
		return "gat"
	case CmdGats:
		return "gats"
	case CmdSet:
		return "set"
	case CmdAdd:
		return "add"
	case CmdReplace:
		return "replace"
	case CmdAppend:
		return "append"
	case CmdPrepend:
		return "prepend"
	case CmdCas:
		return "cas"
	case CmdIncr:
		return "incr"
	case CmdDecr:
		return "decr"
	case CmdDelete:
		return "delete"
	case CmdTouch:
		return "touch"
	case CmdMg:
		return "mg"
	case CmdMs:
		return "ms"
	case CmdMd:
		return "md"
	case CmdMa:
		return "ma"
	case CmdMn:
		return "mn"
	case CmdStats:
		return "stats"
	case CmdFlushAll:
		return "flush_all"
	case CmdVersion:
		return "version"
	case CmdVerbosity:
		return "verbosity"
	}
	return ""
}

// Fast reports whether the command runs in constant time per key (Redis's
// "fast" flag, which the latency monitor's event name follows).
func (c Cmd) Fast() bool { return c != CmdStats && c != CmdFlushAll }

// Outcome is how a reported command ended.
type Outcome uint8

const (
	// Ran: the command ran and answered without an error.
	Ran Outcome = iota
	// Failed: the command ran and answered ERROR, CLIENT_ERROR or
	// SERVER_ERROR.
	Failed
	// Rejected: refused before running (cluster mode: a key of another node).
	Rejected
)

// Observed is one command a connection ran.
type Observed struct {
	Cmd     Cmd
	Outcome Outcome
	// Line is the command line as sent, without its line end; Data is a
	// storage command's data block (nil otherwise). Both are valid only
	// during the Observer call.
	Line, Data []byte
	Duration   time.Duration
	// Remote is the client's address ("ip:port"); Conn numbers the
	// connection (for spreading counters).
	Remote string
	Conn   uint32
}

// Observer hears of every command the front end runs. It is called on the
// connection's goroutine (an event loop's, often), so it must not block.
type Observer interface {
	Observe(o *Observed)
}

// lookupCmd is the command named by tok.
func lookupCmd(tok []byte) Cmd {
	switch string(tok) {
	case "get":
		return CmdGet
	case "gets":
		return CmdGets
	case "gat":
		return CmdGat
	case "gats":
		return CmdGats
	case "set":
		return CmdSet
	case "add":
		return CmdAdd
	case "replace":
		return CmdReplace
	case "append":
		return CmdAppend
	case "prepend":
		return CmdPrepend
	case "cas":
		return CmdCas
	case "incr":
		return CmdIncr
	case "decr":
		return CmdDecr
	case "delete":
		return CmdDelete
	case "touch":
		return CmdTouch
	case "mg":
		return CmdMg
	case "ms":
		return CmdMs
	case "md":
		return CmdMd
	case "ma":
		return CmdMa
	case "mn":
		return CmdMn
	case "stats":
		return CmdStats
	case "flush_all":
		return CmdFlushAll
	case "version":
		return CmdVersion
	case "verbosity":
		return CmdVerbosity
	}
	return cmdNone
}

// obsState is a connection's observation state.
type obsState struct {
	id     uint32
	remote string
	pend   []byte // the pending storage command's line: a view of c.in, or buf
	owned  bool   // pend is in buf
	buf    []byte // where pend is copied when a batch ends before its data
	pendC  Cmd
	ev     Observed
	base   time.Time // monotonic origin (set at first use)
	last   int64     // in a batch: the previous command's end (ns from base), 0 none
}

// process executes every complete request in the input buffer as one
// batch: the shared command boundary ends with it, and a storage line
// still waiting for its data is copied out of the input buffer.
func (c *conn) process() error {
	if c.s.cfg.Observe == nil {
		return c.processBatch()
	}
	err := c.processBatch()
	o := &c.obs
	o.last = 0
	if o.pendC != cmdNone && !o.owned {
		o.buf = append(o.buf[:0], o.pend...)
		o.pend, o.owned = o.buf, true
	}
	return err
}

// obsNow is the monotonic time in ns since the connection's origin.
func (c *conn) obsNow() int64 {
	if c.obs.base.IsZero() {
		c.obs.base = time.Now().Add(-time.Second) // never 0 (0 means none)
	}
	return int64(time.Since(c.obs.base))
}

// obsStart is a command's start: the previous command's end in the same
// batch, or now.
func (c *conn) obsStart() int64 {
	if c.obs.last != 0 {
		return c.obs.last
	}
	return c.obsNow()
}

func (c *conn) initObserve(nc net.Conn) {
	c.obs.pendC = cmdNone
	c.obs.id = uint32(c.s.stats.totalConns.Load())
	if nc != nil && nc.RemoteAddr() != nil {
		c.obs.remote = nc.RemoteAddr().String()
	}
	c.obs.ev.Remote, c.obs.ev.Conn = c.obs.remote, c.obs.id
}

// observeLine reports a command answered at once (dispatch), or keeps the
// line of a storage command that now waits for its data.
func (c *conn) observeLine(cmd Cmd, line []byte, start int64, mark int, outcome Outcome) {
	if cmd == cmdNone {
		return
	}
	if c.pend.active && outcome == Ran {
		c.obs.pend, c.obs.owned = line, false // copied if the batch ends first (process)
		c.obs.pendC = cmd
		return
	}
	c.observe(cmd, line, nil, start, mark, outcome)
}

// observeData reports a storage command whose data block was applied.
func (c *conn) observeData(data []byte, start int64, mark int) {
	cmd := c.obs.pendC
	c.obs.pendC = cmdNone
	if cmd == cmdNone {
		return
	}
	c.observe(cmd, c.obs.pend, data, start, mark, Ran)
}

// dispatchObserved is dispatch with the command reported.
func (c *conn) dispatchObserved(t [][]byte, line []byte) {
	cmd := lookupCmd(t[0])
	start, mark := c.obsStart(), len(c.out)
	if c.s.cfg.Route != nil && c.clusterRefuses(t) { // cluster.go
		c.observeLine(cmd, line, start, mark, Rejected)
		return
	}
	c.run(t)
	c.observeLine(cmd, line, start, mark, Ran)
}

// completeObserved applies a storage command's data block (complete) and
// reports the command.
func (c *conn) completeObserved(data []byte) {
	start, mark := c.obsStart(), len(c.out)
	c.safely(func() { c.complete(data) })
	c.observeData(data, start, mark)
}

// badChunkObserved reports a storage command whose data block did not end
// with \r\n (answered CLIENT_ERROR, or nothing with noreply).
func (c *conn) badChunkObserved(mark int) {
	cmd := c.obs.pendC
	c.obs.pendC = cmdNone
	if cmd != cmdNone {
		c.observe(cmd, c.obs.pend, nil, c.obsStart(), mark, Failed)
	}
}

func (c *conn) observe(cmd Cmd, line, data []byte, start int64, mark int, outcome Outcome) {
	if outcome == Ran && mark <= len(c.out) && replyIsError(c.out[mark:]) {
		outcome = Failed
	}
	end := c.obsNow()
	c.obs.last = end // the next command's start, in this batch
	ev := &c.obs.ev  // Remote and Conn set once (initObserve)
	ev.Cmd, ev.Outcome, ev.Line, ev.Data, ev.Duration = cmd, outcome, line, data, time.Duration(end-start)
	c.s.cfg.Observe.Observe(ev)
	ev.Line, ev.Data = nil, nil
}

// replyIsError reports whether a reply is one of memcached's errors.
func replyIsError(b []byte) bool {
	return bytes.HasPrefix(b, []byte("ERROR")) || bytes.HasPrefix(b, []byte("CLIENT_ERROR")) ||
		bytes.HasPrefix(b, []byte("SERVER_ERROR"))
}
