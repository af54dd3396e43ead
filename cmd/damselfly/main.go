// Command damselfly runs the Damselfly server: a Redis- and Memcached-
// compatible in-memory data store.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/damselflydb/damselfly/server"
)

// memory is a byte count given with Redis's units (512mb, 4gb).
type memory int64

func (m *memory) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("memory", &s); err != nil {
		return err
	}
	n, err := server.ParseMemory(s)
	if err != nil {
		return fmt.Errorf("%q: %v (e.g. 512mb, 4gb)", s, err)
	}
	*m = memory(n)
	return nil
}

type cli struct {
	Port          int              `help:"TCP port for the Redis protocol." default:"6379" env:"DAMSELFLY_PORT"`
	Bind          string           `help:"Address to listen on." default:"0.0.0.0" env:"DAMSELFLY_BIND"`
	Requirepass   string           `help:"Password clients must AUTH with." env:"DAMSELFLY_REQUIREPASS"`
	ProtectedMode bool             `name:"protected-mode" help:"Without a password, accept only loopback clients." default:"true" negatable:"" env:"DAMSELFLY_PROTECTED_MODE"`
	Maxmemory     memory           `help:"Memory limit (e.g. 512mb, 4gb); 0 = none." default:"0" env:"DAMSELFLY_MAXMEMORY"`
	Dir           string           `help:"Directory for dump files." default:"." env:"DAMSELFLY_DIR"`
	Dbfilename    string           `help:"Dump file name." default:"dump.rdb" env:"DAMSELFLY_DBFILENAME"`
	Save          string           `help:"Save schedule: pairs of 'seconds changes'; empty disables." default:"3600 1 300 100 60 10000" env:"DAMSELFLY_SAVE"`
	Shards        int              `help:"Number of shards (default: GOMAXPROCS)." default:"0" env:"DAMSELFLY_SHARDS"`
	Dbnum         int              `help:"Number of databases." default:"16" env:"DAMSELFLY_DBNUM"`
	Unixsocket    string           `help:"Also listen on this Unix socket." env:"DAMSELFLY_UNIXSOCKET"`
	Replicaof     string           `help:"Replicate the primary at host:port from the start." env:"DAMSELFLY_REPLICAOF"`
	Masterauth    string           `help:"Password to AUTH with on the primary." env:"DAMSELFLY_MASTERAUTH"`
	ReplBacklog   memory           `name:"repl_backlog_size" help:"Replication backlog for partial resync (e.g. 1mb)." default:"1mb" env:"DAMSELFLY_REPL_BACKLOG_SIZE"`
	Loglevel      string           `help:"debug, verbose, notice or warning." default:"notice" enum:"debug,verbose,notice,warning" env:"DAMSELFLY_LOGLEVEL"`
	Version       kong.VersionFlag `help:"Print the version and exit."`
}

func main() {
	var c cli
	parser, err := kong.New(&c,
		kong.Name("damselfly"),
		kong.Description("An in-memory data store that speaks the Redis and Memcached protocols."),
		kong.Vars{"version": "damselfly " + server.Version},
		kong.Exit(func(code int) {
			if code != 0 {
				code = 2
			}
			os.Exit(code)
		}),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if _, err := parser.Parse(os.Args[1:]); err != nil {
		parser.Errorf("%s", err)
		fmt.Fprintln(os.Stderr, "run 'damselfly --help' for usage")
		os.Exit(2)
	}
	if err := validate(&c); err != nil {
		fmt.Fprintln(os.Stderr, "damselfly:", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel(c.Loglevel)}))
	if c.Shards <= 0 {
		c.Shards = runtime.GOMAXPROCS(0)
	}
	cfg := server.Config{
		Port: c.Port, Bind: c.Bind, RequirePass: c.Requirepass, MaxMemory: int64(c.Maxmemory),
		Dir: c.Dir, DBFilename: c.Dbfilename, Shards: c.Shards, DBNum: c.Dbnum,
		UnixSocket: c.Unixsocket, ProtectedMode: c.ProtectedMode, Save: c.Save, Logger: log,
		ReplicaOf: c.Replicaof, MasterAuth: c.Masterauth, ReplBacklogSize: int64(c.ReplBacklog),
	}
	srv := server.New(cfg)
	if err := srv.Start(cfg); err != nil {
		log.Error("cannot start", "err", err)
		os.Exit(1)
	}
	log.Info("damselfly ready", "version", server.Version, "addr", srv.Addr(), "shards", c.Shards, "pid", os.Getpid())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := srv.Run(ctx); err != nil {
		log.Error("stopped with error", "err", err)
		os.Exit(1)
	}
	log.Info("damselfly stopped")
}

func validate(c *cli) error {
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("--port %d: must be 0..65535", c.Port)
	}
	if c.Dbnum < 1 {
		return fmt.Errorf("--dbnum %d: must be at least 1", c.Dbnum)
	}
	if c.Shards < 0 || c.Shards > 256 {
		return fmt.Errorf("--shards %d: must be 1..256", c.Shards)
	}
	if _, err := server.ParseSaveSchedule(c.Save); err != nil {
		return fmt.Errorf("--save %q: %v", c.Save, err)
	}
	if strings.ContainsRune(c.Dbfilename, '/') {
		return fmt.Errorf("--dbfilename %q: must be a file name, not a path", c.Dbfilename)
	}
	return nil
}

func logLevel(s string) slog.Level {
	switch s {
	case "debug":
		return slog.LevelDebug
	case "warning":
		return slog.LevelWarn
	}
	return slog.LevelInfo
}
