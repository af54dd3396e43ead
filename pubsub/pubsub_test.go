package pubsub

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/damselflydb/damselfly/glob"
)

type delivery struct {
	who     int
	pattern string
	viaPat  bool
}

func publishAll(r *Registry[int], k Kind, ch string) []delivery {
	var got []delivery
	n := r.Publish(k, []byte(ch), func(s *Subscriber[int], p []byte) {
		got = append(got, delivery{s.Owner, string(p), p != nil})
	})
	if n != len(got) {
		panic("Publish's count differs from its deliveries")
	}
	return got
}

func bs(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, x := range s {
		out[i] = []byte(x)
	}
	return out
}

// TestOrder: channel subscribers in subscription order, then patterns in
// order of first subscription; confirmations carry Redis's counts.
func TestOrder(t *testing.T) {
	r := NewRegistry[int]()
	s := make([]*Subscriber[int], 4)
	for i := range s {
		s[i] = &Subscriber[int]{Owner: i}
	}
	var conf []string
	c := func(name []byte, n int) { conf = append(conf, fmt.Sprintf("%s:%d", name, n)) }
	r.Subscribe(s[2], Channel, bs("news"), c)
	r.Subscribe(s[0], Channel, bs("news", "news", "other"), c)
	r.Subscribe(s[1], Pattern, bs("n*"), c)
	r.Subscribe(s[3], Pattern, bs("*"), c)
	r.Subscribe(s[0], Pattern, bs("n*"), c)
	r.Subscribe(s[0], Shard, bs("news"), c)
	if want := "news:1 news:1 news:1 other:2 n*:1 *:1 n*:3 news:1"; strings.Join(conf, " ") != want {
		t.Fatalf("confirmations %q, want %q", strings.Join(conf, " "), want)
	}
	got := publishAll(r, Channel, "news")
	want := []delivery{{2, "", false}, {0, "", false}, {1, "n*", true}, {0, "n*", true}, {3, "*", true}}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if got := publishAll(r, Shard, "news"); !slices.Equal(got, []delivery{{0, "", false}}) {
		t.Fatalf("shard publish %v", got)
	}
	conf = nil
	r.Unsubscribe(s[0], Channel, nil, c)
	r.Unsubscribe(s[0], Channel, nil, c)
	r.Unsubscribe(s[0], Shard, bs("nope"), c)
	if want := "news:2 other:1 :1 nope:1"; strings.Join(conf, " ") != want {
		t.Fatalf("unsubscribe confirmations %q, want %q", strings.Join(conf, " "), want)
	}
	if ch, p, sh := r.Counts(); ch != 1 || p != 2 || sh != 1 {
		t.Fatalf("counts %d %d %d", ch, p, sh)
	}
	r.UnsubscribeAll(s[0])
	if s[0].Subscribed() || s[0].Count(Shard) != 0 {
		t.Fatal("still subscribed after UnsubscribeAll")
	}
	dropped := 0
	r.Subscribe(s[1], Shard, bs("a", "b"), nil)
	r.UnsubscribeShardWhere(func(ch string) bool { return ch == "a" }, func(s *Subscriber[int], ch []byte, n int) {
		if s.Owner != 1 || string(ch) != "a" || n != 1 {
			t.Errorf("dropped %d %s %d", s.Owner, ch, n)
		}
		dropped++
	})
	if dropped != 1 || !slices.Equal(r.Channels(Shard, nil), []string{"b"}) {
		t.Fatalf("UnsubscribeShardWhere: %d, %v", dropped, r.Channels(Shard, nil))
	}
}

// model is the obvious map implementation the registry must agree with.
type model struct {
	subs map[int][numKinds]map[string]bool
}

func (m *model) receivers(k Kind, ch string) []delivery {
	var out []delivery
	for who, sets := range m.subs {
		if sets[k][ch] {
			out = append(out, delivery{who, "", false})
		}
		if k == Channel {
			for p := range sets[Pattern] {
				if glob.MatchString(p, ch, false) {
					out = append(out, delivery{who, p, true})
				}
			}
		}
	}
	return out
}

func sortDeliveries(d []delivery) {
	sort.Slice(d, func(i, j int) bool {
		if d[i].who != d[j].who {
			return d[i].who < d[j].who
		}
		if d[i].viaPat != d[j].viaPat {
			return !d[i].viaPat
		}
		return d[i].pattern < d[j].pattern
	})
}

// TestAgainstModel runs random operations against a registry and a map
// model and compares every count and every fan-out.
func TestAgainstModel(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		r := NewRegistry[int]()
		const nsubs = 6
		subs := make([]*Subscriber[int], nsubs)
		m := model{subs: map[int][numKinds]map[string]bool{}}
		for i := range subs {
			subs[i] = &Subscriber[int]{Owner: i}
			m.subs[i] = [numKinds]map[string]bool{{}, {}, {}}
		}
		names := []string{"a", "b", "ab", "", "news.1", "news.2"}
		pats := []string{"a*", "*", "news.*", "?", "", "[ab]*"}
		for step := range 400 {
			who := rng.IntN(nsubs)
			s := subs[who]
			k := Kind(rng.IntN(int(numKinds)))
			pool := names
			if k == Pattern {
				pool = pats
			}
			pick := func() [][]byte {
				n := rng.IntN(3)
				out := make([][]byte, n)
				for i := range out {
					out[i] = []byte(pool[rng.IntN(len(pool))])
				}
				return out
			}
			switch op := rng.IntN(10); {
			case op < 4:
				ns := pick()
				r.Subscribe(s, k, ns, nil)
				for _, n := range ns {
					m.subs[who][k][string(n)] = true
				}
			case op < 7:
				ns := pick()
				var confirmed []string
				r.Unsubscribe(s, k, ns, func(n []byte, _ int) { confirmed = append(confirmed, string(n)) })
				if len(ns) == 0 {
					want := len(m.subs[who][k])
					if want == 0 {
						want = 1 // the null confirmation
					}
					if len(confirmed) != want {
						t.Fatalf("seed %d step %d: unsubscribe-all confirmed %d, want %d", seed, step, len(confirmed), want)
					}
					clear(m.subs[who][k])
				}
				for _, n := range ns {
					delete(m.subs[who][k], string(n))
				}
			case op < 8:
				r.UnsubscribeAll(s)
				for kk := range numKinds {
					clear(m.subs[who][kk])
				}
			default:
				pk := Channel
				if rng.IntN(3) == 0 {
					pk = Shard
				}
				ch := names[rng.IntN(len(names))]
				got, want := publishAll(r, pk, ch), m.receivers(pk, ch)
				sortDeliveries(got)
				sortDeliveries(want)
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: publish %q: %v, want %v", seed, step, ch, got, want)
				}
			}
			checkCounts(t, r, subs, &m)
		}
	}
}

func checkCounts(t *testing.T, r *Registry[int], subs []*Subscriber[int], m *model) {
	t.Helper()
	var active [numKinds]map[string]int
	for k := range active {
		active[k] = map[string]int{}
	}
	for who, sets := range m.subs {
		total := 0
		for k := range numKinds {
			if subs[who].Count(k) != len(sets[k]) {
				t.Fatalf("subscriber %d kind %d: count %d, want %d", who, k, subs[who].Count(k), len(sets[k]))
			}
			total += len(sets[k])
			for n := range sets[k] {
				active[k][n]++
			}
		}
		if subs[who].Subscribed() != (total > 0) {
			t.Fatalf("subscriber %d: Subscribed wrong", who)
		}
	}
	for _, k := range []Kind{Channel, Shard} {
		var want []string
		for n, c := range active[k] {
			want = append(want, n)
			if r.NumSub(k, []byte(n)) != c {
				t.Fatalf("NumSub(%d, %q) = %d, want %d", k, n, r.NumSub(k, []byte(n)), c)
			}
		}
		slices.Sort(want)
		if got := r.Channels(k, nil); !slices.Equal(got, want) && len(got)+len(want) > 0 {
			t.Fatalf("Channels(%d) = %q, want %q", k, got, want)
		}
	}
	ch, p, sh := r.Counts()
	if ch != len(active[Channel]) || p != len(active[Pattern]) || sh != len(active[Shard]) || r.NumPat() != p {
		t.Fatalf("Counts %d %d %d, want %d %d %d", ch, p, sh, len(active[Channel]), len(active[Pattern]), len(active[Shard]))
	}
}

// TestConcurrent subscribes, publishes and unsubscribes from many
// goroutines at once (run with -race); a subscriber's deliveries must stop
// once its UnsubscribeAll returns.
func TestConcurrent(t *testing.T) {
	r := NewRegistry[int]()
	const workers = 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &Subscriber[int]{Owner: w}
			rng := rand.New(rand.NewPCG(uint64(w), 2))
			for i := range 2000 {
				ch := []byte(fmt.Sprintf("c%d", rng.IntN(8)))
				switch rng.IntN(6) {
				case 0:
					r.Subscribe(s, Channel, [][]byte{ch}, nil)
				case 1:
					r.Subscribe(s, Pattern, bs("c[0-3]"), nil)
				case 2:
					r.Unsubscribe(s, Kind(rng.IntN(2)), nil, nil)
				case 3:
					r.Subscribe(s, Shard, [][]byte{ch}, nil)
				default:
					r.Publish(Kind(rng.IntN(3)&2), ch, func(d *Subscriber[int], _ []byte) {
						_ = d.Count(Channel) // read of another goroutine's subscriber
					})
					r.Channels(Channel, []byte("c*"))
					r.NumSub(Shard, ch)
				}
				if i%100 == 99 {
					r.UnsubscribeAll(s)
					r.Publish(Channel, ch, func(d *Subscriber[int], _ []byte) {
						if d == s {
							t.Errorf("worker %d got a message after UnsubscribeAll", w)
						}
					})
				}
			}
			r.UnsubscribeAll(s)
		}()
	}
	wg.Wait()
	if ch, p, sh := r.Counts(); ch+p+sh != 0 {
		t.Fatalf("left behind: %d %d %d", ch, p, sh)
	}
}

// TestOrdSetCompacts: removals leave holes that are squeezed out, and the
// order survives.
func TestOrdSetCompacts(t *testing.T) {
	var o ordSet[int]
	for i := range 1000 {
		o.add(i)
	}
	for i := range 1000 {
		if i%10 != 0 {
			o.remove(i)
		}
	}
	if len(o.items) > 2*o.len()+9 {
		t.Fatalf("%d slots for %d members", len(o.items), o.len())
	}
	want := []int{}
	for i := 0; i < 1000; i += 10 {
		want = append(want, i)
	}
	if !slices.Equal(o.members(), want) {
		t.Fatal("order lost in compaction")
	}
}
