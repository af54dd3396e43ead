package server

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeListsCommands keeps README.md's "What is supported" section in
// step with the command table: every implemented command is named there,
// and no command named as supported is missing from the table.
func TestReadmeListsCommands(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "## What is supported")
	if start < 0 {
		t.Fatal(`README.md has no "## What is supported" section`)
	}
	section := text[start+len("## What is supported"):]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	// The "Not supported yet" bullet may name commands (MIGRATE) and
	// subcommands of implemented ones (CLIENT TRACKING) alike.
	supported := section
	if i := strings.Index(section, "- Not supported yet"); i >= 0 {
		supported = section[:i]
		if j := strings.Index(section[i+1:], "\n- "); j >= 0 {
			supported += section[i+1+j:]
		}
	}
	words := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, w := range regexp.MustCompile(`[A-Z][A-Z_]+`).FindAllString(s, -1) {
			m[strings.ToLower(w)] = true
		}
		return m
	}
	// Option words in brackets ([FILTERBY MODULE|ACLCAT]) are not commands.
	claims := regexp.MustCompile(`\[[^\]]*\]`).ReplaceAllString(supported, "")
	inSupported, claimed := words(supported), words(claims)
	implemented := commandTable()
	for _, f := range redisFacts {
		if strings.Contains(f.name, "|") {
			continue
		}
		_, impl := implemented[f.name]
		switch {
		case impl && !inSupported[f.name]:
			t.Errorf("%s is implemented but README.md's supported list does not name it", strings.ToUpper(f.name))
		case !impl && claimed[f.name]:
			t.Errorf("README.md names %s as supported, but it is not implemented", strings.ToUpper(f.name))
		}
	}
	for name := range implemented {
		if !inSupported[name] && !isRedisCommand(name) {
			t.Errorf("%s (Damselfly's own) is implemented but README.md does not name it", strings.ToUpper(name))
		}
	}
}

func isRedisCommand(name string) bool {
	for _, f := range redisFacts {
		if f.name == name {
			return true
		}
	}
	return false
}
