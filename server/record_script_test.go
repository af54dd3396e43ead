package server

import (
	"os"
	"strings"
	"testing"
)

// TestRecordScript (re)writes the expected replies of a testdata script
// from a real redis-server: DAMSELFLY_RECORD=testdata/x.txt go test ./server
// -run TestRecordScript. Request, comment and blank lines are kept; every
// reply is replaced by Redis's own. Review the diff before committing.
func TestRecordScript(t *testing.T) {
	path := os.Getenv("DAMSELFLY_RECORD")
	if path == "" {
		t.Skip("set DAMSELFLY_RECORD=testdata/<script>.txt to record its replies from redis-server")
	}
	addr := startRedis(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := dialAddr(t, addr)
	r.do("FLUSHALL")
	r.reply()
	var out []string
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "> "):
			args, ok := splitArgs([]byte(line[2:]), nil)
			if !ok {
				t.Fatalf("bad request line %q", line)
			}
			strs := make([]string, len(args))
			for k, a := range args {
				strs[k] = string(a)
			}
			r.do(strs...)
			out = append(out, line)
			out = append(out, r.reply()...)
		case line == "" || strings.HasPrefix(line, "# "):
			out = append(out, line)
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
