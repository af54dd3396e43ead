package difftest

import (
	"fmt"
	"strconv"
	"strings"
)

// parseSteps reads steps back from step.String's format, so a printed
// minimal sequence can be replayed (TestReplay).
func parseSteps(text string) ([]step, error) {
	var out []step
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if ms, ok := strings.CutPrefix(line, "~ sleep "); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(ms, "ms"))
			if err != nil {
				return nil, fmt.Errorf("%q: %v", line, err)
			}
			out = append(out, step{kind: stSleep, ms: n})
			continue
		}
		cs, rest, ok := strings.Cut(line, " ")
		if !ok || len(cs) < 2 || cs[0] != 'c' {
			return nil, fmt.Errorf("%q: no connection", line)
		}
		c, err := strconv.Atoi(cs[1:])
		if err != nil || c < 1 || c > 3 {
			return nil, fmt.Errorf("%q: bad connection", line)
		}
		st := step{conn: c - 1}
		switch {
		case strings.HasPrefix(rest, "~ CLIENT UNBLOCK"):
			st.kind = stUnblock
			if strings.HasSuffix(rest, " ERROR") {
				st.args = []string{"ERROR"}
			}
			out = append(out, st)
			continue
		case strings.HasPrefix(rest, "~ HELLO 3"):
			st.kind, st.args = stHello, []string{"HELLO", "3"}
			out = append(out, st)
			continue
		case strings.HasPrefix(rest, "~ DEL "):
			f := strings.Fields(rest)
			st.kind, st.args = stResync, []string{unquote(f[2])}
			out = append(out, st)
			continue
		case strings.HasPrefix(rest, ">& "):
			st.kind = stBlock
		case strings.HasPrefix(rest, ">* "):
			st.kind = stScan
		case strings.HasPrefix(rest, "> "):
			st.kind = stCmd
		default:
			return nil, fmt.Errorf("%q: unknown step", line)
		}
		_, argText, _ := strings.Cut(rest, " ")
		args, err := splitQuoted(argText)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", line, err)
		}
		st.args = args
		out = append(out, st)
	}
	return out, nil
}

func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}

// splitQuoted splits on spaces, reading Go-quoted arguments (quoteArg).
func splitQuoted(s string) ([]string, error) {
	var args []string
	for s = strings.TrimLeft(s, " "); s != ""; s = strings.TrimLeft(s, " ") {
		if s[0] == '"' {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return nil, err
			}
			args = append(args, unquote(q))
			s = s[len(q):]
			continue
		}
		a, rest, _ := strings.Cut(s, " ")
		args = append(args, a)
		s = rest
	}
	return args, nil
}
