package main

// The config file: `damselfly /path/to/damselfly.conf [flags]`, in
// redis.conf syntax.
//
// Every directive is the name of a flag (kebab-case = Redis's names) or of a
// CONFIG SET parameter, followed by its value; lines are split with Redis's
// quoting rules (server.SplitConfigLine). A directive naming a flag becomes
// that flag, placed before the command line's flags, so the command line
// overrides the file (and the file overrides DAMSELFLY_* environment
// variables); yes/no become the flag's true/false. A CONFIG parameter that
// has no flag (maxmemory-samples, hash-max-listpack-entries, ...) is applied
// to the server before it starts serving, as CONFIG SET would. Special
// directives are in directiveHandlers: `include` reads another file in
// place, `save` lines add up (`save ""` clears), `replicaof`/`slaveof` take
// host and port, `rename-command` is refused, and `user` is the ACL hook.
// Anything else is an error naming the file and line, and damselfly exits
// with code 2 as for a bad flag.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/damselflydb/damselfly/server"
)

// directive is one line of a config file.
type directive struct {
	file string
	line int
	text string
	name string // lower case
	args []string
}

func (d directive) errorf(format string, a ...any) error {
	return fmt.Errorf("config file %s:%d: '%s': %s", d.file, d.line, d.text, fmt.Sprintf(format, a...))
}

// confFile is what a config file says.
type confFile struct {
	path     string
	flagArgs []string    // flags for kong, in file order
	flagSrc  []directive // the line of each (checkFlagArgs names it)
	runtime  []directive // CONFIG SET parameters without a flag
	save     []string    // pairs from save lines; nil: no save line
	saveSet  bool
	// users are the ACL `user` lines (see directiveHandlers).
	users []directive
	depth int // include nesting of the file being read
}

// directiveHandler handles a directive that is neither a flag nor a CONFIG
// parameter as such.
type directiveHandler func(cf *confFile, d directive, flags map[string]*kong.Flag) error

// directiveHandlers is the registry of special directives.
func directiveHandlers() map[string]directiveHandler {
	return map[string]directiveHandler{
		"include": func(cf *confFile, d directive, flags map[string]*kong.Flag) error {
			if len(d.args) != 1 {
				return d.errorf("include takes one file name")
			}
			return cf.read(d.args[0], flags, cf.depth+1)
		},
		"save": func(cf *confFile, d directive, _ map[string]*kong.Flag) error {
			cf.saveSet = true
			if len(d.args) == 1 && d.args[0] == "" {
				cf.save = cf.save[:0]
				return nil
			}
			if len(d.args)%2 != 0 || len(d.args) == 0 {
				return d.errorf("save takes pairs of <seconds> <changes>, or \"\"")
			}
			cf.save = append(cf.save, d.args...)
			return nil
		},
		"replicaof": replicaOfDirective,
		"slaveof":   replicaOfDirective,
		"rename-command": func(_ *confFile, d directive, _ map[string]*kong.Flag) error {
			return d.errorf("rename-command is not supported: Damselfly cannot rename or hide commands (use ACL rules once available)")
		},
		// ACL hook: `user <name> <rules...>` lines. The acl package parses
		// them; until the server applies ACL users, refuse them rather than
		// start without the passwords the file asks for. To wire ACLs,
		// collect them here (cf.users = append(cf.users, d)) and hand
		// cf.users to the server in main.
		"user": func(cf *confFile, d directive, _ map[string]*kong.Flag) error {
			return d.errorf("ACL users are not supported yet (use requirepass)")
		},
	}
}

func replicaOfDirective(cf *confFile, d directive, _ map[string]*kong.Flag) error {
	if len(d.args) != 2 {
		return d.errorf("%s takes <host> <port>", d.name)
	}
	cf.addFlag("--replicaof="+d.args[0]+":"+d.args[1], d)
	return nil
}

// maxIncludeDepth bounds nested includes (a file including itself).
const maxIncludeDepth = 16

// loadConfigFile reads path (and its includes) against the flags of parser.
func loadConfigFile(path string, parser *kong.Kong) (*confFile, error) {
	flags := map[string]*kong.Flag{}
	for _, group := range parser.Model.AllFlags(false) {
		for _, f := range group {
			switch f.Name {
			case "help", "version", "healthcheck":
				continue // not configuration
			}
			flags[f.Name] = f
			for _, a := range f.Aliases {
				flags[a] = f
			}
		}
	}
	cf := &confFile{path: path}
	if err := cf.read(path, flags, 0); err != nil {
		return nil, err
	}
	if cf.saveSet {
		cf.addFlag("--save="+strings.Join(cf.save, " "), directive{file: path, text: "save"})
	}
	return cf, nil
}

func (cf *confFile) read(path string, flags map[string]*kong.Flag, depth int) error {
	if depth > maxIncludeDepth {
		return fmt.Errorf("config file %s: includes nested more than %d deep", path, maxIncludeDepth)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	handlers := directiveHandlers()
	for i, raw := range strings.Split(string(data), "\n") {
		text := strings.TrimSpace(strings.TrimSuffix(raw, "\r"))
		if text == "" || text[0] == '#' {
			continue
		}
		d := directive{file: path, line: i + 1, text: text}
		args, ok := server.SplitConfigLine(text)
		if !ok {
			return d.errorf("unbalanced quotes")
		}
		d.name, d.args = strings.ToLower(args[0]), args[1:]
		if h := handlers[d.name]; h != nil {
			cf.depth = depth
			if err := h(cf, d, flags); err != nil {
				return err
			}
			continue
		}
		if f := flags[d.name]; f != nil {
			arg, err := flagArg(f, d)
			if err != nil {
				return err
			}
			cf.addFlag(arg, d)
			continue
		}
		if server.IsConfigParam(d.name) {
			if len(d.args) == 0 {
				return d.errorf("missing value")
			}
			cf.runtime = append(cf.runtime, d)
			continue
		}
		return d.errorf("unknown directive %q", args[0])
	}
	return nil
}

// flagArg turns a directive into the flag argument kong parses.
func flagArg(f *kong.Flag, d directive) (string, error) {
	if len(d.args) != 1 {
		return "", d.errorf("%s takes exactly one value", d.name)
	}
	v := d.args[0]
	if f.IsBool() {
		switch strings.ToLower(v) {
		case "yes", "true":
			v = "true"
		case "no", "false":
			v = "false"
		default:
			return "", d.errorf("%s takes yes or no", d.name)
		}
	}
	return "--" + f.Name + "=" + v, nil
}

// checkFlagArgs parses the file's flags alone, one at a time, so that a bad
// value is reported with its file and line.
func checkFlagArgs(cf *confFile, newParser func(*cli) (*kong.Kong, error)) error {
	for i, arg := range cf.flagArgs {
		var scratch cli
		p, err := newParser(&scratch)
		if err != nil {
			return err
		}
		if _, err := p.Parse([]string{arg}); err != nil {
			if d := cf.flagSrc[i]; d.line > 0 {
				return d.errorf("%v", err)
			}
			return fmt.Errorf("config file %s: %s: %v", cf.path, arg, err)
		}
	}
	return nil
}

func (cf *confFile) addFlag(arg string, d directive) {
	cf.flagArgs = append(cf.flagArgs, arg)
	cf.flagSrc = append(cf.flagSrc, d)
}

// readConfigFile loads path ("" : no file, nil result) and checks its flags.
func readConfigFile(path string, parser *kong.Kong) (*confFile, error) {
	if path == "" {
		return nil, nil
	}
	cf, err := loadConfigFile(path, parser)
	if err != nil {
		return nil, err
	}
	return cf, checkFlagArgs(cf, newParser)
}

// absPath is the file's absolute path for the server ("" without a file).
func (cf *confFile) absPath() string {
	if cf == nil {
		return ""
	}
	if p, err := filepath.Abs(cf.path); err == nil {
		return p
	}
	return cf.path
}

// applyRuntime sets the CONFIG parameters of the file on srv.
func (cf *confFile) applyRuntime(srv *server.Server) error {
	if cf == nil {
		return nil
	}
	for _, d := range cf.runtime {
		if err := srv.ApplyConfig(d.name, strings.Join(d.args, " ")); err != nil {
			return d.errorf("%v", err)
		}
	}
	return nil
}

// splitConfigPath takes the config file from the command line: the first
// argument when it is not a flag, as redis-server does.
func splitConfigPath(args []string) (string, []string) {
	if len(args) > 0 && args[0] != "" && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "", args
}
