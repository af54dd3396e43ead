package difftest

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

const replyDeadline = 10 * time.Second

// defaultLimits are Redis 7.0's encoding limits, set before each sequence.
var defaultLimits = []string{"CONFIG", "SET", "hash-max-listpack-entries", "512", "hash-max-listpack-value", "64",
	"set-max-intset-entries", "512", "zset-max-listpack-entries", "128", "zset-max-listpack-value", "64",
	"list-max-listpack-size", "-2"}

// side is one server under test: its client connections and a control
// connection (FLUSHALL, INFO, CLIENT UNBLOCK) whose replies are not part of
// the comparison.
type side struct {
	name    string
	addr    string
	ctl     *conn
	conns   []*conn
	ids     []string // CLIENT ID of each connection
	pending []bool   // parked in a blocking command
}

// cstate is what the runner tracks per connection, from Redis's replies.
type cstate struct {
	inMulti bool
	queued  [][]string
	parked  []string // the blocking command a parked connection runs
}

// divergence is a step whose replies differ.
type divergence struct {
	at      int // index of the step
	step    step
	redis   string
	damsel  string
	summary string // "INCRBYFLOAT" or "INCRBYFLOAT (served)"...
}

func (d *divergence) String() string {
	return fmt.Sprintf("step %d: %s\n  redis:     %s\n  damselfly: %s", d.at+1, d.step,
		strings.ReplaceAll(d.redis, "\n", "\n             "), strings.ReplaceAll(d.damsel, "\n", "\n             "))
}

// runner plays sequences against Redis (sides[0]) and Damselfly (sides[1]).
type runner struct {
	sides    [2]*side
	state    []cstate
	commands int // commands sent to each side, for the report
}

func newRunner(redisAddr, damselAddr string) (*runner, error) {
	r := &runner{sides: [2]*side{{name: "redis", addr: redisAddr}, {name: "damselfly", addr: damselAddr}}}
	for _, s := range r.sides {
		c, err := dial(s.addr)
		if err != nil {
			return nil, err
		}
		s.ctl = c
	}
	return r, nil
}

func (r *runner) close() {
	for _, s := range r.sides {
		for _, c := range s.conns {
			c.close()
		}
		s.conns = nil
		if s.ctl != nil {
			s.ctl.close()
		}
	}
}

// ctlDo runs a command on a side's control connection.
func (s *side) ctlDo(args ...string) (value, error) {
	if err := s.ctl.send(args); err != nil {
		return value{}, err
	}
	v, _, err := s.ctl.read(replyDeadline)
	return v, err
}

// reset empties both servers and opens fresh connections.
func (r *runner) reset(nconns int) error {
	r.state = make([]cstate, nconns)
	for _, s := range r.sides {
		for _, c := range s.conns {
			c.close()
		}
		s.conns, s.ids, s.pending = nil, nil, make([]bool, nconns)
		if v, err := s.ctlDo("FLUSHALL"); err != nil || v.kind != '+' {
			return fmt.Errorf("%s: FLUSHALL: %v %v", s.name, v.render(), err)
		}
		if v, err := s.ctlDo(defaultLimits...); err != nil || v.kind != '+' {
			return fmt.Errorf("%s: CONFIG SET: %v %v", s.name, v.render(), err)
		}
		for i := 0; i < nconns; i++ {
			c, err := dial(s.addr)
			if err != nil {
				return err
			}
			s.conns = append(s.conns, c)
			if err := c.send([]string{"CLIENT", "ID"}); err != nil {
				return err
			}
			v, _, err := c.read(replyDeadline)
			if err != nil || v.kind != ':' {
				return fmt.Errorf("%s: CLIENT ID: %v %v", s.name, v.render(), err)
			}
			s.ids = append(s.ids, v.str)
		}
	}
	return nil
}

// run plays steps on fresh connections and returns the first divergence,
// or an error when a server fails outright (no reply, closed connection).
func (r *runner) run(steps []step, nconns int) (*divergence, error) {
	if err := r.reset(nconns); err != nil {
		return nil, err
	}
	for i, st := range steps {
		d, err := r.step(st)
		if err != nil {
			return &divergence{at: i, step: st, redis: "?", damsel: err.Error(), summary: "ERROR " + stepName(st)}, nil
		}
		if d != nil {
			d.at, d.step = i, st
			return d, nil
		}
		if d, err := r.checkParked(); err != nil || d != nil {
			if d == nil {
				d = &divergence{redis: "?", damsel: err.Error(), summary: "ERROR served"}
			}
			d.at, d.step = i, st
			return d, nil
		}
	}
	// Release whatever is still parked, comparing what it gets.
	for c := range r.state {
		if r.sides[0].pending[c] || r.sides[1].pending[c] {
			if d, err := r.unblock(c); err != nil || d != nil {
				if d == nil {
					d = &divergence{redis: "?", damsel: err.Error(), summary: "ERROR unblock"}
				}
				d.at, d.step = len(steps), step{kind: stUnblock, conn: c}
				return d, nil
			}
		}
	}
	return nil, nil
}

func stepName(st step) string {
	if len(st.args) == 0 {
		return fmt.Sprint("step kind ", st.kind)
	}
	return strings.ToUpper(st.args[0])
}

// exchange sends args on connection c of both sides and reads both replies.
func (r *runner) exchange(c int, args []string) (vals [2]value, raws [2][]byte, err error) {
	for _, s := range r.sides {
		if err = s.conns[c].send(args); err != nil {
			return vals, raws, fmt.Errorf("%s: send: %v", s.name, err)
		}
	}
	r.commands++
	for i, s := range r.sides {
		if vals[i], raws[i], err = s.conns[c].read(replyDeadline); err != nil {
			return vals, raws, fmt.Errorf("%s: %v", s.name, err)
		}
	}
	return vals, raws, nil
}

func (r *runner) step(st step) (*divergence, error) {
	c := st.conn
	switch st.kind {
	case stSleep:
		time.Sleep(time.Duration(st.ms) * time.Millisecond)
		return nil, nil
	case stUnblock:
		return r.unblock(c, st.args...)
	}
	if r.sides[0].pending[c] || r.sides[1].pending[c] {
		// A minimized sequence may have lost the release: do it here.
		if d, err := r.unblock(c); err != nil || d != nil {
			return d, err
		}
	}
	switch st.kind {
	case stHello, stResync:
		args := st.args
		if st.kind == stResync {
			args = []string{"DEL", st.args[0]}
		}
		_, _, err := r.exchange(c, args)
		return nil, err
	case stScan:
		return r.scan(c, st.args)
	case stBlock:
		return r.block(c, st.args)
	}
	vals, raws, err := r.exchange(c, st.args)
	if err != nil {
		return nil, err
	}
	cs := &r.state[c]
	var d *divergence
	name := strings.ToLower(st.args[0])
	switch {
	case cs.inMulti && name == "exec":
		d = r.compareExec(cs.queued, vals, raws)
	default:
		d = compare(st.args, vals, raws)
	}
	// Follow MULTI state from Redis's replies.
	switch {
	case !cs.inMulti && name == "multi" && vals[0].kind == '+':
		cs.inMulti, cs.queued = true, nil
	case cs.inMulti && (name == "exec" || name == "discard"):
		cs.inMulti, cs.queued = false, nil
	case cs.inMulti && vals[0].kind == '+' && vals[0].str == "QUEUED":
		cs.queued = append(cs.queued, st.args)
	}
	return d, nil
}

// compareExec compares EXEC's replies element by element, each normalized
// for its own queued command.
func (r *runner) compareExec(queued [][]string, vals [2]value, raws [2][]byte) *divergence {
	if string(raws[0]) == string(raws[1]) {
		return nil
	}
	a, b := vals[0], vals[1]
	if a.kind != b.kind || a.null != b.null || len(a.elems) != len(b.elems) || len(a.elems) != len(queued) {
		return &divergence{redis: a.render(), damsel: b.render(), summary: "EXEC"}
	}
	for i := range a.elems {
		if d := compareValues(queued[i], a.elems[i], b.elems[i]); d != nil {
			d.summary = "EXEC/" + d.summary
			d.redis = fmt.Sprintf("[%d of EXEC, %s] %s", i+1, strings.Join(queued[i], " "), d.redis)
			return d
		}
	}
	return nil
}

func compare(args []string, vals [2]value, raws [2][]byte) *divergence {
	if string(raws[0]) == string(raws[1]) {
		return nil
	}
	return compareValues(args, vals[0], vals[1])
}

func compareValues(args []string, a, b value) *divergence {
	if closeTimes(args, a, b) {
		return nil
	}
	na, nb := normalize(args, a), normalize(args, b)
	if na == nb {
		return nil
	}
	return &divergence{redis: na, damsel: nb, summary: strings.ToUpper(args[0])}
}

// block sends a blocking command and waits until each side has either
// answered it or parked the connection.
func (r *runner) block(c int, args []string) (*divergence, error) {
	for _, s := range r.sides {
		if err := s.conns[c].send(args); err != nil {
			return nil, err
		}
	}
	r.commands++
	var vals [2]value
	var raws [2][]byte
	var parked [2]bool
	for i, s := range r.sides {
		want := 1
		for _, p := range s.pending {
			if p {
				want++
			}
		}
		deadline := time.Now().Add(replyDeadline)
		for {
			if s.conns[c].ready(time.Millisecond) {
				v, raw, err := s.conns[c].read(replyDeadline)
				if err != nil {
					return nil, fmt.Errorf("%s: %v", s.name, err)
				}
				vals[i], raws[i] = v, raw
				break
			}
			n, err := s.blockedClients()
			if err != nil {
				return nil, err
			}
			if n >= want {
				parked[i] = true
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("%s: neither answered nor blocked (blocked_clients %d, want %d)", s.name, n, want)
			}
		}
	}
	switch {
	case parked[0] && parked[1]:
		r.sides[0].pending[c], r.sides[1].pending[c] = true, true
		r.state[c].parked = args
		return nil, nil
	case parked[0] != parked[1]:
		d := &divergence{redis: "(blocked)", damsel: "(blocked)", summary: strings.ToUpper(args[0]) + " blocks?"}
		if !parked[0] {
			d.redis = normalize(args, vals[0])
			r.sides[1].pending[c] = true
		} else {
			d.damsel = normalize(args, vals[1])
			r.sides[0].pending[c] = true
		}
		r.state[c].parked = args
		return d, nil
	}
	return compare(args, vals, raws), nil
}

func (s *side) blockedClients() (int, error) {
	v, err := s.ctlDo("INFO", "clients")
	if err != nil {
		return 0, fmt.Errorf("%s: INFO: %v", s.name, err)
	}
	for _, l := range strings.Split(v.str, "\r\n") {
		if n, ok := strings.CutPrefix(l, "blocked_clients:"); ok {
			return strconv.Atoi(n)
		}
	}
	return 0, fmt.Errorf("%s: no blocked_clients in INFO", s.name)
}

// checkParked, after a step, finds which parked connections were served
// by it. Redis serves them before it runs the next command; Damselfly's
// woken clients may take a moment, so its side is given time to catch up
// with Redis's count.
func (r *runner) checkParked() (*divergence, error) {
	any := false
	for _, p := range r.sides[0].pending {
		any = any || p
	}
	for _, p := range r.sides[1].pending {
		any = any || p
	}
	if !any {
		return nil, nil
	}
	var served [2]map[int]value
	var raws [2]map[int][]byte
	var want int
	for i, s := range r.sides {
		served[i], raws[i] = map[int]value{}, map[int][]byte{}
		parked := 0
		for _, p := range s.pending {
			if p {
				parked++
			}
		}
		deadline := time.Now().Add(2 * time.Second) // generous: the machine may be loaded
		if i == 0 {
			deadline = time.Now() // Redis is done when its reply came
		}
		for {
			n, err := s.blockedClients()
			if err != nil {
				return nil, err
			}
			gone := parked - n
			if i == 1 && gone < want && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
				continue
			}
			if i == 0 {
				want = gone
			}
			// Collect the replies of the served ones.
			got := 0
			end := time.Now().Add(2 * time.Second)
			for got < gone && time.Now().Before(end) {
				got = 0
				for c, p := range s.pending {
					if !p {
						continue
					}
					if _, ok := served[i][c]; ok {
						got++
						continue
					}
					if s.conns[c].ready(time.Millisecond) { // a past deadline would not even try to read
						v, raw, err := s.conns[c].read(replyDeadline)
						if err != nil {
							return nil, fmt.Errorf("%s: %v", s.name, err)
						}
						served[i][c], raws[i][c] = v, raw
						got++
					}
				}
				if got < gone {
					time.Sleep(100 * time.Microsecond)
				}
			}
			break
		}
	}
	for c := range r.state {
		va, oka := served[0][c]
		vb, okb := served[1][c]
		if oka {
			r.sides[0].pending[c] = false
		}
		if okb {
			r.sides[1].pending[c] = false
		}
		args := r.state[c].parked
		switch {
		case oka && okb:
			if d := compare(args, [2]value{va, vb}, [2][]byte{raws[0][c], raws[1][c]}); d != nil {
				d.summary += " (served)"
				d.redis = fmt.Sprintf("[c%d served] %s", c+1, d.redis)
				return d, nil
			}
		case oka && !okb && va.kind == '-' && va.str == unblockedGone:
			// Documented (differences_test.go): Damselfly fails blocked
			// XREADGROUPs only when DEL/UNLINK remove their stream.
			if err := r.sides[1].release(c); err != nil {
				return nil, err
			}
		case oka != okb:
			d := &divergence{redis: "(still blocked)", damsel: "(still blocked)", summary: stepName(step{args: args}) + " served?"}
			if oka {
				d.redis = fmt.Sprintf("[c%d served] %s", c+1, normalize(args, va))
			} else {
				d.damsel = fmt.Sprintf("[c%d served] %s", c+1, normalize(args, vb))
			}
			return d, nil
		}
	}
	return nil, nil
}

// unblock releases connection c with CLIENT UNBLOCK on both sides and
// compares what the command answers.
func (r *runner) unblock(c int, how ...string) (*divergence, error) {
	var vals [2]value
	var raws [2][]byte
	var got [2]bool
	for i, s := range r.sides {
		v, err := s.ctlDo(append([]string{"CLIENT", "UNBLOCK", s.ids[c]}, how...)...)
		if err != nil {
			return nil, fmt.Errorf("%s: CLIENT UNBLOCK: %v", s.name, err)
		}
		if v.kind == ':' && v.str == "1" || s.pending[c] {
			if vals[i], raws[i], err = s.conns[c].read(replyDeadline); err != nil {
				return nil, fmt.Errorf("%s: reply after CLIENT UNBLOCK: %v", s.name, err)
			}
			got[i] = true
		}
		s.pending[c] = false
	}
	args := r.state[c].parked
	switch {
	case got[0] && got[1]:
		if d := compare(args, vals, raws); d != nil {
			d.summary += " (unblocked)"
			return d, nil
		}
	case got[0] != got[1]:
		return &divergence{redis: fmt.Sprint("released: ", got[0]), damsel: fmt.Sprint("released: ", got[1]),
			summary: "CLIENT UNBLOCK"}, nil
	}
	return nil, nil
}

// scan iterates a SCAN-family command from its cursor to 0 on each side
// and compares the union of what came back (cursors are the server's own
// business; Redis may return an element twice).
func (r *runner) scan(c int, args []string) (*divergence, error) {
	pos := 1
	if strings.ToUpper(args[0]) != "SCAN" {
		pos = 2
	}
	pairs := strings.ToUpper(args[0]) == "HSCAN" || strings.ToUpper(args[0]) == "ZSCAN"
	var res [2]string
	for i, s := range r.sides {
		a := append([]string(nil), args...)
		seen := map[string]bool{}
		for n := 0; ; n++ {
			if err := s.conns[c].send(a); err != nil {
				return nil, err
			}
			r.commands++
			v, _, err := s.conns[c].read(replyDeadline)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", s.name, err)
			}
			if v.kind != '*' || len(v.elems) != 2 || n > 100000 {
				res[i] = v.render()
				break
			}
			items := v.elems[1].elems
			step := 1
			if pairs {
				step = 2
			}
			for j := 0; j+step <= len(items); j += step {
				k := items[j].render()
				if pairs {
					k += " => " + items[j+1].render()
				}
				seen[k] = true
			}
			if v.elems[0].str == "0" {
				keys := make([]string, 0, len(seen))
				for k := range seen {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				res[i] = "(iterated) " + strings.Join(keys, " | ")
				break
			}
			a[pos] = v.elems[0].str
		}
	}
	if res[0] != res[1] {
		return &divergence{redis: res[0], damsel: res[1], summary: strings.ToUpper(args[0])}, nil
	}
	return nil, nil
}

const unblockedGone = "UNBLOCKED the stream key no longer exists"

// release frees a parked connection of this side alone and drops what it
// gets.
func (s *side) release(c int) error {
	if _, err := s.ctlDo("CLIENT", "UNBLOCK", s.ids[c]); err != nil {
		return err
	}
	if _, _, err := s.conns[c].read(replyDeadline); err != nil {
		return fmt.Errorf("%s: reply after CLIENT UNBLOCK: %v", s.name, err)
	}
	s.pending[c] = false
	return nil
}
