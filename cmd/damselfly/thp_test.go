//go:build linux

package main

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// hugePageAdvised counts the mappings of process pid whose VmFlags carry
// "hg" (madvise(MADV_HUGEPAGE)).
func hugePageAdvised(t *testing.T, pid int) int {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if flags, ok := strings.CutPrefix(sc.Text(), "VmFlags:"); ok && strings.Contains(" "+flags+" ", " hg ") {
			n++
		}
	}
	return n
}

// TestDisableTHP: disable-thp is Redis's (yes by default, CONFIG GET
// reports it, CONFIG SET refuses it as immutable); with yes the keyspace's
// memory is advised no huge pages, with no (from the config file or
// --disable-thp no) its slab arenas are.
func TestDisableTHP(t *testing.T) {
	bin := buildBinary(t)
	ctx := context.Background()
	fill := func(p *proc) {
		if err := p.rc.Do(ctx, "DEBUG", "POPULATE", 100000, "key", 100).Err(); err != nil {
			t.Fatal(err)
		}
	}
	def := start(t, bin, t.TempDir(), "--save", "")
	fill(def)
	if v := def.rc.ConfigGet(ctx, "disable-thp").Val()["disable-thp"]; v != "yes" {
		t.Fatalf("default disable-thp %q", v)
	}
	if err := def.rc.ConfigSet(ctx, "disable-thp", "no").Err(); err == nil || err.Error() != "ERR CONFIG SET failed (possibly related to argument 'disable-thp') - can't set immutable config" {
		t.Fatalf("CONFIG SET disable-thp: %v", err)
	}
	if n := hugePageAdvised(t, def.cmd.Process.Pid); n != 0 {
		t.Errorf("disable-thp yes: %d mappings advised huge pages", n)
	}

	dir := t.TempDir()
	conf := filepath.Join(dir, "damselfly.conf")
	if err := os.WriteFile(conf, []byte("disable-thp no\nsave \"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*proc{startConfProc(t, bin, conf, t.TempDir()), start(t, bin, t.TempDir(), "--save", "", "--disable-thp", "no")} {
		fill(p)
		if v := p.rc.ConfigGet(ctx, "disable-thp").Val()["disable-thp"]; v != "no" {
			t.Fatalf("%v: disable-thp %q", p.cmd.Args, v)
		}
		if n := hugePageAdvised(t, p.cmd.Process.Pid); n == 0 {
			t.Errorf("%v: no mapping advised huge pages", p.cmd.Args)
		}
	}
}
