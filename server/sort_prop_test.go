package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// sortModel computes SORT of a list by the rules in Redis's documentation,
// independently of cmd_sort.go: numeric weights (ties by the element's
// bytes) or ALPHA, BY a string key or hash field (a missing weight is 0, or
// sorts first with ALPHA), "BY nosort" keeping the list order, LIMIT, and
// GET # / string / hash field (missing: nil).
type sortModel struct {
	strs   map[string]string
	hashes map[string]map[string]string
}

func (m *sortModel) lookup(pat, elem string) (string, bool) {
	if pat == "#" {
		return elem, true
	}
	i := strings.Index(pat, "*")
	if i < 0 {
		return "", false
	}
	key, rest := pat[:i]+elem, pat[i+1:]
	if j := strings.Index(rest, "->"); j >= 0 && j+2 < len(rest) {
		h, ok := m.hashes[key+rest[:j]]
		if !ok {
			return "", false
		}
		v, ok := h[rest[j+2:]]
		return v, ok
	}
	v, ok := m.strs[key+rest]
	return v, ok
}

func (m *sortModel) sort(list []string, by string, alpha, desc bool, off, cnt int, gets []string) ([]any, error) {
	elems := append([]string(nil), list...)
	if by != "nosort" {
		type w struct {
			num float64
			str string
			ok  bool
		}
		ws := map[int]w{}
		for i, e := range elems {
			v, ok := e, true
			if by != "" {
				v, ok = m.lookup(by, e)
			}
			if alpha {
				ws[i] = w{str: v, ok: ok}
				continue
			}
			f := 0.0
			if ok {
				var err error
				if f, err = strconv.ParseFloat(v, 64); err != nil {
					return nil, fmt.Errorf("ERR One or more scores can't be converted into double")
				}
			}
			ws[i] = w{num: f}
		}
		idx := make([]int, len(elems))
		for i := range idx {
			idx[i] = i
		}
		less := func(a, b int) int {
			wa, wb := ws[a], ws[b]
			if !alpha {
				if wa.num != wb.num {
					if wa.num < wb.num {
						return -1
					}
					return 1
				}
				return strings.Compare(elems[a], elems[b])
			}
			if by != "" {
				switch {
				case !wa.ok && !wb.ok:
					return 0
				case !wa.ok:
					return -1
				case !wb.ok:
					return 1
				}
				return strings.Compare(wa.str, wb.str)
			}
			return strings.Compare(elems[a], elems[b])
		}
		sort.SliceStable(idx, func(i, j int) bool {
			c := less(idx[i], idx[j])
			if desc {
				c = -c
			}
			return c < 0
		})
		sorted := make([]string, len(idx))
		for i, k := range idx {
			sorted[i] = elems[k]
		}
		elems = sorted
	} else if desc {
		for i, j := 0, len(elems)-1; i < j; i, j = i+1, j-1 {
			elems[i], elems[j] = elems[j], elems[i]
		}
	}
	if cnt >= 0 || off != 0 {
		off = max(off, 0)
		if off > len(elems) {
			off = len(elems)
		}
		endAt := len(elems)
		if cnt >= 0 && off+cnt < endAt {
			endAt = off + cnt
		}
		elems = elems[off:endAt]
	}
	var out []any
	for _, e := range elems {
		if len(gets) == 0 {
			out = append(out, e)
		}
		for _, g := range gets {
			if v, ok := m.lookup(g, e); ok {
				out = append(out, v)
			} else {
				out = append(out, nil)
			}
		}
	}
	return out, nil
}

// TestSortProperty runs random SORTs of random lists with random weight
// and GET keys on the server and the model and compares every reply.
func TestSortProperty(t *testing.T) {
	s := startServer(t)
	rdb := newClient(t, s)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	for round := 0; round < 30; round++ {
		rdb.FlushAll(ctx)
		m := &sortModel{strs: map[string]string{}, hashes: map[string]map[string]string{}}
		numeric := rng.IntN(2) == 0
		var list []string
		for i := 0; i < rng.IntN(12); i++ {
			e := fmt.Sprint(rng.IntN(20) - 5)
			if !numeric {
				e = string(rune('a'+rng.IntN(6))) + string(rune('a'+rng.IntN(3)))
			}
			list = append(list, e)
		}
		if len(list) > 0 {
			args := []any{"RPUSH", "l"}
			for _, e := range list {
				args = append(args, e)
			}
			rdb.Do(ctx, args...)
		}
		for _, e := range list {
			if rng.IntN(4) > 0 {
				w := fmt.Sprint(rng.IntN(5))
				m.strs["w_"+e] = w
				rdb.Set(ctx, "w_"+e, w, 0)
			}
			if rng.IntN(3) > 0 {
				v := fmt.Sprint("name-", e)
				m.strs["n_"+e] = v
				rdb.Set(ctx, "n_"+e, v, 0)
			}
			if rng.IntN(3) > 0 {
				f := map[string]string{"age": fmt.Sprint(rng.IntN(4)), "nm": "h" + e}
				m.hashes["h_"+e] = f
				rdb.HSet(ctx, "h_"+e, "age", f["age"], "nm", f["nm"])
			}
		}
		for q := 0; q < 40; q++ {
			args := []any{"SORT", "l"}
			by := []string{"", "", "w_*", "h_*->age", "nosort", "n_*"}[rng.IntN(6)]
			alpha := rng.IntN(3) == 0 || (!numeric && by == "") || by == "n_*"
			desc := rng.IntN(2) == 0
			off, cnt := 0, -1
			if by != "" {
				args = append(args, "BY", by)
			}
			if rng.IntN(2) == 0 {
				off, cnt = rng.IntN(8)-1, rng.IntN(6)-1
				args = append(args, "LIMIT", off, cnt)
			}
			if alpha {
				args = append(args, "ALPHA")
			}
			if desc {
				args = append(args, "DESC")
			}
			var gets []string
			for g := 0; g < rng.IntN(3); g++ {
				p := []string{"#", "n_*", "h_*->nm", "w_*", "const"}[rng.IntN(5)]
				gets = append(gets, p)
				args = append(args, "GET", p)
			}
			want, werr := m.sort(list, by, alpha, desc, off, cnt, gets)
			got, gerr := rdb.Do(ctx, args...).Result()
			if werr != nil || gerr != nil {
				if fmt.Sprint(werr) != fmt.Sprint(gerr) {
					t.Fatalf("%v (list %q): error %v, want %v", args, list, gerr, werr)
				}
				continue
			}
			if fmt.Sprint(got) != fmt.Sprint(want) && !(len(want) == 0 && fmt.Sprint(got) == "[]") {
				t.Fatalf("%v (list %q):\n got %q\nwant %q", args, list, got, want)
			}
		}
	}
}
