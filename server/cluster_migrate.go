package server

// Slot migration, kvrocks's protocol on our own machinery.
//
// CLUSTERX MIGRATE <slot|start-end> <target-id> [sync|async [timeout]] on
// the source moves the slots in batches (up to 1024 slots, 16384 keys or
// 8 MiB of payloads per batch) over one connection to the target, whose
// replies a reader goroutine consumes so that nothing waits for a round
// trip except the two barriers of a batch (payloads applied; hand-off):
//
//  1. CLUSTER IMPORT <slot> 0 on the link: the target serves that slot to
//     the link (and to ASKING clients) before the topology says so.
//  2. Cut: with every shard locked, the slot's keys (from the per-slot
//     index, so the pause is proportional to the slot) are serialized as
//     RESTORE ... REPLACE ABSTTL payloads and a tap is put on the journal;
//     from then on every journaled write touching the slot is captured in
//     commit order. So each change is either in the cut or in the tail,
//     never both and never neither.
//  3. The payloads, then the tail, are streamed; once the target has
//     applied the payloads (outside any pause), the tail is sent again
//     while it keeps coming.
//  4. Writes to the slot are paused (-TRYAGAIN), every shard is locked once
//     so that writes already past the check finish, and the last of the
//     tail is sent; CLUSTER IMPORT <slot> 1 makes the target serve the slot
//     to everyone, and the source answers -MOVED to it. The pause is the
//     last tail's round trip. The tap keeps forwarding for a grace period,
//     for a write that was admitted before the pause but committed after.
//  5. When the control plane's topology gives the slot to the target
//     (CLUSTERX SETSLOT or SETNODES), the source deletes its copy.
//
// A failure (link broken, error reply) ends the migration with
// migrating_state:fail, lifts the pause and tells the target (IMPORT 2),
// which drops what it received; the source still owns and serves the slot.
//
// Known limits: keys evicted on the source during a migration stay on the
// target; a client blocked (BLMOVE and friends) on a key of the slot since
// before the hand-off may still write on the source during the grace period
// only.

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/damselflydb/damselfly/cluster"
	"github.com/damselflydb/damselfly/shard"
	"github.com/damselflydb/damselfly/snapshot"
)

// migration is the state of this node's outgoing slot migration, as
// kvrocks reports it in CLUSTER INFO (migrating_slot, destination_node,
// migrating_state: start, success or fail), and of an incoming one.
type migration struct {
	mu      sync.Mutex
	running bool
	slots   cluster.Range // the range being (or last) migrated
	slot    int           // the batch being moved
	dst     string
	state   string // "" before the first migration
	tap     atomic.Pointer[migTap]
	// lastPause is the longest write pause of the last migration (µs).
	lastPause int64
	// importing side: the slot and its state (start, success, error).
	impSlot  string
	impState string
}

func (m *migration) info(field func(string, any)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state != "" {
		field("migrating_slot", m.slots.String()) // the whole range, as kvrocks-controller compares it
		field("destination_node", m.dst)
		field("migrating_state", m.state)
		field("migrating_last_pause_us", m.lastPause)
	}
	if m.impState != "" {
		field("importing_slot", m.impSlot)
		field("import_state", m.impState)
	}
}

// migTap captures the journaled writes touching the slots being migrated.
type migTap struct {
	slots []atomic.Bool // per slot: captured (set under every shard lock)
	mu    sync.Mutex
	cmds  [][][]byte
}

// migrationTap is the journal's hook (journalWrite): while a slot is
// migrating, a write touching it is copied for the target. Called under
// the writer's shard locks, in commit order.
func (s *Server) migrationTap(db int, args [][]byte) {
	if s.cluster == nil {
		return
	}
	t := s.cluster.mig.tap.Load()
	if t == nil || db != 0 || len(args) == 0 {
		return
	}
	cmd := s.cmds[strings.ToLower(string(args[0]))]
	if cmd == nil {
		return
	}
	if cmd.subs != nil && len(args) > 1 {
		if sub := cmd.subs[strings.ToLower(string(args[1]))]; sub != nil {
			cmd = sub
		}
	}
	for _, k := range cmd.keys(args) {
		if t.slots[cluster.KeySlot(k)].Load() {
			cp := make([][]byte, len(args))
			for i, a := range args {
				cp[i] = append([]byte(nil), a...)
			}
			t.mu.Lock()
			t.cmds = append(t.cmds, cp)
			t.mu.Unlock()
			return
		}
	}
}

func (t *migTap) take() [][][]byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.cmds
	t.cmds = nil
	return out
}

// clusterxMigrate is CLUSTERX MIGRATE <slot|start-end> <target-id> [sync|async [timeout]].
func (c *Client) clusterxMigrate(args [][]byte) {
	s := c.srv
	rg, err := cluster.ParseRange(string(args[2]))
	if err != nil {
		c.err("ERR " + err.Error())
		return
	}
	sync, timeout := false, time.Duration(0)
	if len(args) >= 5 {
		switch {
		case eq(args[4], "async"):
			if len(args) == 6 {
				c.err("ERR Async migration does not support timeout")
				return
			}
		case eq(args[4], "sync"):
			sync = true
			if len(args) == 6 {
				n, ok := parseInt(args[5])
				if !ok {
					c.err("ERR timeout is not an integer or out of range")
					return
				}
				if n < 0 {
					c.err("ERR timeout is negative")
					return
				}
				timeout = time.Duration(n) * time.Second
			}
		default:
			c.err("ERR Invalid sync flag")
			return
		}
	}
	v := s.cluster.view.Load()
	dstID := string(args[3])
	var dst *cluster.Node
	if v.topo != nil {
		dst = v.topo.Node(dstID)
	}
	switch {
	case dst == nil:
		c.err("ERR Can't find the destination node id")
		return
	case v.me == nil || !v.me.Primary || s.repl.IsReplica():
		c.err("ERR Slave can't migrate slot")
		return
	case !dst.Primary:
		c.err("ERR Can't migrate slot to a slave")
		return
	case dst == v.me:
		c.err("ERR Can't migrate slot to myself")
		return
	}
	for sl := rg.Start; sl <= rg.End; sl++ {
		if v.topo.Owner(sl) != v.me {
			c.err("ERR Can't migrate slot which doesn't belong to me")
			return
		}
		if _, gone := v.migrated[sl]; gone {
			c.err("ERR Can't migrate slot which has been migrated")
			return
		}
	}
	m := &s.cluster.mig
	m.mu.Lock()
	if m.running {
		m.mu.Unlock()
		c.err("ERR There is already a migrating slot")
		return
	}
	m.running, m.slots, m.slot, m.dst, m.state, m.lastPause = true, rg, rg.Start, dstID, "start", 0
	m.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- s.migrateSlots(rg, dst) }()
	if !sync && len(args) == 4 {
		c.migrateDefaultReply(done) // cluster_controller.go: kvrocks-controller's one-second check
		return
	}
	if !sync {
		c.ok()
		return
	}
	var tc <-chan time.Time
	if timeout > 0 {
		tm := time.NewTimer(timeout)
		defer tm.Stop()
		tc = tm.C
	}
	select {
	case err := <-done:
		if err != nil {
			c.err("ERR " + err.Error())
			return
		}
		c.ok()
	case <-tc:
		c.err("ERR sync migrating timeout")
	}
}

// migLink is the connection to the target. Commands are streamed without
// waiting: a reader goroutine consumes the replies in order, and sync is
// the only round trip (a batch needs two: its payloads applied, and the
// hand-off under the write pause).
type migLink struct {
	nc net.Conn
	rd *bufio.Reader
	wb []byte
	q  chan migExpect // replies the reader is to consume, in order
	mu sync.Mutex
	e  error // the first error the reader met
}

// migExpect is n replies to read, then (done != nil) a barrier to report.
type migExpect struct {
	n    int
	done chan error
}

func newMigLink(nc net.Conn) *migLink {
	l := &migLink{nc: nc, rd: bufio.NewReaderSize(nc, 64<<10), q: make(chan migExpect, 1024)}
	go func() {
		for ex := range l.q {
			for i := 0; i < ex.n; i++ {
				if err := readReply(l.rd); err != nil {
					l.mu.Lock()
					if l.e == nil {
						l.e = err
					}
					l.mu.Unlock()
				}
			}
			if ex.done != nil {
				l.mu.Lock()
				ex.done <- l.e
				l.mu.Unlock()
			}
		}
	}()
	return l
}

// close ends the link: the reader drains what it still expects (each read
// fails at once on the closed connection) and exits.
func (l *migLink) close() {
	l.nc.Close()
	close(l.q)
}

func (l *migLink) add(args ...[]byte) {
	l.wb = append(l.wb, '*')
	l.wb = strconv.AppendInt(l.wb, int64(len(args)), 10)
	l.wb = append(l.wb, '\r', '\n')
	for _, a := range args {
		l.wb = append(l.wb, '$')
		l.wb = strconv.AppendInt(l.wb, int64(len(a)), 10)
		l.wb = append(l.wb, '\r', '\n')
		l.wb = append(l.wb, a...)
		l.wb = append(l.wb, '\r', '\n')
	}
}

// send writes what was added, whose n replies the reader will consume.
func (l *migLink) send(n int) error {
	if len(l.wb) > 0 {
		l.nc.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := l.nc.Write(l.wb); err != nil {
			return err
		}
		l.wb = l.wb[:0]
	}
	if n > 0 {
		l.q <- migExpect{n: n}
	}
	return nil
}

// sync waits until every reply sent for so far is read; an error reply
// (or a broken link) fails the migration.
func (l *migLink) sync() error {
	done := make(chan error, 1)
	l.q <- migExpect{done: done}
	return <-done
}

// flush sends what was added and waits for its n replies (and all before).
func (l *migLink) flush(n int) error {
	if err := l.send(n); err != nil {
		return err
	}
	return l.sync()
}

// readReply reads one RESP value, returning an error reply as an error.
func readReply(rd *bufio.Reader) error {
	line, err := rd.ReadString('\n')
	if err != nil {
		return err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return errors.New("empty reply")
	}
	switch line[0] {
	case '-':
		return errors.New("target: " + line[1:])
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n >= 0 {
			if _, err := rd.Discard(n + 2); err != nil {
				return err
			}
		}
	case '*':
		n, _ := strconv.Atoi(line[1:])
		for i := 0; i < n; i++ {
			if err := readReply(rd); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Server) migrateSlots(rg cluster.Range, dst *cluster.Node) (err error) {
	m := &s.cluster.mig
	defer func() {
		m.mu.Lock()
		m.running = false
		if err != nil {
			m.state = "fail"
		} else {
			m.state = "success"
		}
		m.mu.Unlock()
		if err != nil {
			s.log.Warn("cluster: slot migration failed", "slots", rg.String(), "err", err)
		}
	}()
	addr := net.JoinHostPort(dst.Host, strconv.Itoa(dst.Port))
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return fmt.Errorf("failed to connect to the destination node: %v", err)
	}
	l := newMigLink(nc)
	defer l.close()
	if pass := s.cfg.requirePass(); pass != "" {
		l.add([]byte("AUTH"), []byte(pass))
		if err := l.flush(1); err != nil {
			return err
		}
	}
	tap := &migTap{slots: make([]atomic.Bool, cluster.Slots)}
	m.tap.Store(tap)
	for sl := rg.Start; sl <= rg.End && err == nil; {
		var end int
		end, err = s.migrateBatch(l, tap, sl, rg.End, addr)
		sl = end + 1
	}
	// Grace: writes admitted before a slot's pause but committed after it
	// still reach the target; then the tap comes off.
	time.Sleep(5 * time.Millisecond)
	all := s.store.All()
	s.store.LockMany(&all)
	m.tap.Store(nil)
	s.store.UnlockMany(&all)
	if err != nil {
		return err
	}
	if err := sendCmds(l, tap.take(), 0); err != nil {
		return err
	}
	return l.sync()
}

// migrateBatch moves the slots from first on (at most up to last) over
// the link, as many as fit one batch (steps 1-4 of the file comment), and
// returns the last slot it moved. tap already captures the slots handed
// over before (their grace period lasts until the whole range is done).
func (s *Server) migrateBatch(l *migLink, tap *migTap, first, last int, addr string) (_ int, err error) {
	cs := s.cluster
	m := &cs.mig
	end := first - 1 // last slot of the batch
	paused := false
	defer func() {
		if err == nil {
			return
		}
		if paused {
			cs.mu.Lock()
			cs.update(func(v *clusterView) { v.forbidden = noSlots })
			cs.mu.Unlock()
		}
		if end >= first {
			l.add([]byte("CLUSTER"), []byte("IMPORT"), []byte(slotRange(first, end)), []byte("2"))
			l.flush(1)
		}
	}()
	restores, end, err := s.cutSlots(tap, first, last)
	if err != nil {
		return end, err
	}
	// IMPORT start for the batch's slots (one range: the target changes
	// its view once per batch, not per slot), then their keys, pipelined.
	l.add([]byte("CLUSTER"), []byte("IMPORT"), []byte(slotRange(first, end)), []byte("0"))
	if err := sendCmds(l, restores, 1); err != nil {
		return end, err
	}
	restores = nil
	// Wait for the target to apply the payloads outside the pause, then
	// forward the tail until what is left is short.
	if err := catchUp(l, tap); err != nil {
		return end, err
	}
	// Pause writes to the slots, let admitted writes commit, send the rest
	// with the hand-off.
	start := time.Now()
	cs.mu.Lock()
	cs.update(func(v *clusterView) { v.forbidden = cluster.Range{Start: first, End: end} })
	cs.mu.Unlock()
	paused = true
	all := s.store.All()
	s.store.LockMany(&all)
	s.store.UnlockMany(&all)
	tail := append(tap.take(), [][]byte{[]byte("CLUSTER"), []byte("IMPORT"), []byte(slotRange(first, end)), []byte("1")})
	if err := sendCmds(l, tail, 0); err != nil {
		return end, err
	}
	if err := l.sync(); err != nil {
		return end, err
	}
	cs.mu.Lock()
	cs.update(func(v *clusterView) {
		v.forbidden = noSlots
		mig := make(map[int]string, len(v.migrated)+end-first+1)
		for k, a := range v.migrated {
			mig[k] = a
		}
		for sl := first; sl <= end; sl++ {
			mig[sl] = addr
		}
		v.migrated = mig
	})
	cs.mu.Unlock()
	paused = false
	pause := time.Since(start).Microseconds()
	m.mu.Lock()
	m.lastPause = max(m.lastPause, pause)
	m.slot = end
	m.mu.Unlock()
	return end, nil
}

// cutSlots serializes the keys of the slots from first on (at most up to
// last, within one batch's limits) as RESTORE commands, with every shard
// locked, and starts the tap on them at the same instant. end is the last
// slot taken.
func (s *Server) cutSlots(tap *migTap, first, last int) (restores [][][]byte, end int, err error) {
	// A batch is one cut (every shard locked while its keys are
	// serialized), two round trips and one write pause: large enough that
	// per-batch costs vanish next to the data, small enough that the cut
	// stays a short stall.
	const maxSlots, maxKeys, maxBytes = 1024, 16384, 8 << 20
	end = first - 1
	all := s.store.All()
	s.store.LockMany(&all)
	defer s.store.UnlockMany(&all)
	nowMs := now()
	size := 0
	for sl := first; sl <= last && sl-first < maxSlots && len(restores) < maxKeys && size < maxBytes; sl++ {
		end = sl
		for _, sh := range s.store.Shards() {
			d := sh.PeekDB(0)
			if d == nil {
				continue
			}
			for _, k := range d.AppendSlotKeys(nil, sl, -1) {
				e, ok := d.Find(shard.Hash(k), k)
				if !ok || e.Expired(nowMs) {
					continue
				}
				p, derr := snapshot.Dump(&e)
				if derr != nil {
					return nil, end, derr
				}
				size += len(k) + len(p)
				restores = append(restores, [][]byte{[]byte("RESTORE"), k, []byte(strconv.FormatInt(e.ExpireAt(), 10)), p,
					[]byte("REPLACE"), []byte("ABSTTL")})
			}
		}
		tap.slots[sl].Store(true)
	}
	return restores, end, nil
}

// catchUp waits for the target to apply what was sent and forwards the
// writes the tap captured meanwhile, until few are left (or 20 rounds).
func catchUp(l *migLink, tap *migTap) error {
	for round := 0; round < 20; round++ {
		if err := l.sync(); err != nil {
			return err
		}
		cmds := tap.take()
		if err := sendCmds(l, cmds, 0); err != nil {
			return err
		}
		if len(cmds) < 64 {
			break
		}
	}
	return nil
}

// sendCmds sends cmds after the extra commands already added to l, in
// writes of about 256 KiB; the reader consumes their replies (l.sync waits
// for them).
func sendCmds(l *migLink, cmds [][][]byte, extra int) error {
	n := extra
	for _, c := range cmds {
		l.add(c...)
		n++
		if len(l.wb) >= 256<<10 {
			if err := l.send(n); err != nil {
				return err
			}
			n = 0
		}
	}
	return l.send(n)
}

// slotRange renders slots first..end as CLUSTER IMPORT takes them.
func slotRange(first, end int) string {
	if first == end {
		return strconv.Itoa(first)
	}
	return strconv.Itoa(first) + "-" + strconv.Itoa(end)
}

// clusterImport is CLUSTER IMPORT <slot|start-end> <0 start|1 success|2
// failed>, sent by a source node on its migration link (a range: one batch,
// one change of view).
func (c *Client) clusterImport(args [][]byte) {
	s := c.srv
	cs := s.cluster
	var rg cluster.Range
	if strings.Contains(string(args[2]), "-") {
		r, err := cluster.ParseRange(string(args[2]))
		if err != nil {
			c.err("ERR Slot is out of range")
			return
		}
		rg = r
	} else {
		slot, ok := parseInt(args[2])
		if !ok {
			c.errNotInteger()
			return
		}
		if slot < 0 || slot >= cluster.Slots {
			c.err("ERR Slot is out of range")
			return
		}
		rg = cluster.Range{Start: int(slot), End: int(slot)}
	}
	state, ok := parseInt(args[3])
	if !ok {
		c.errNotInteger()
		return
	}
	v := cs.view.Load()
	if v.me == nil || !v.me.Primary || s.repl.IsReplica() {
		c.err("ERR Slave can't import slot")
		return
	}
	m := &cs.mig
	switch state {
	case 0:
		cs.mu.Lock()
		cs.update(func(v *clusterView) {
			if v.importing.Start >= 0 && v.importing.End == rg.Start-1 {
				v.importing.End = rg.End // the next batch
			} else {
				v.importing = rg
			}
		})
		cs.mu.Unlock()
		c.cl.importing = true
		m.mu.Lock()
		m.impSlot, m.impState = rg.String(), "start"
		m.mu.Unlock()
	case 1:
		cs.mu.Lock()
		cs.update(func(v *clusterView) {
			imp := make(map[int]bool, len(v.imported)+rg.End-rg.Start+1)
			for k := range v.imported {
				imp[k] = true
			}
			for sl := rg.Start; sl <= rg.End; sl++ {
				imp[sl] = true
			}
			v.imported = imp
			if v.importing.Start >= rg.Start && v.importing.Start <= rg.End {
				v.importing.Start = rg.End + 1
				if v.importing.Start > v.importing.End {
					v.importing = noSlots
				}
			}
		})
		cs.mu.Unlock()
		m.mu.Lock()
		m.impSlot, m.impState = rg.String(), "success"
		m.mu.Unlock()
	case 2:
		cs.mu.Lock()
		cs.update(func(v *clusterView) {
			v.importing = noSlots
		})
		cs.mu.Unlock()
		var drop []int
		for sl := rg.Start; sl <= rg.End; sl++ {
			if v.topo.Owner(sl) != v.me {
				drop = append(drop, sl)
			}
		}
		s.dropSlots(drop)
		m.mu.Lock()
		m.impSlot, m.impState = rg.String(), "error"
		m.mu.Unlock()
	default:
		c.err("ERR Invalid import state")
		return
	}
	c.ok()
}
