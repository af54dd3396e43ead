package main

import (
	"fmt"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/damselflydb/damselfly/server"
)

// yesno is a Redis-style boolean flag value: yes/no (true/false also).
type yesno bool

func (y *yesno) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("yes|no", &s); err != nil {
		return err
	}
	switch strings.ToLower(s) {
	case "yes", "true", "1":
		*y = true
	case "no", "false", "0":
		*y = false
	default:
		return fmt.Errorf("%q: want yes or no", s)
	}
	return nil
}

// aofFlags are the append-only file's flags, with Redis's names.
type aofFlags struct {
	Appendonly         yesno  `name:"appendonly" help:"Log every write to the append-only file (yes/no); at start the AOF is loaded instead of the dump." default:"no" env:"DAMSELFLY_APPENDONLY"`
	Appendfsync        string `name:"appendfsync" help:"always (reply after fsync, group commit), everysec or no." default:"everysec" enum:"always,everysec,no" env:"DAMSELFLY_APPENDFSYNC"`
	Appendfilename     string `name:"appendfilename" help:"Base name of the AOF files." default:"appendonly.aof" env:"DAMSELFLY_APPENDFILENAME"`
	Appenddirname      string `name:"appenddirname" help:"Directory (inside --dir) holding the AOF files." default:"appendonlydir" env:"DAMSELFLY_APPENDDIRNAME"`
	AutoRewritePercent int    `name:"auto-aof-rewrite-percentage" help:"Rewrite the AOF when it grew by this percentage since the last rewrite (0 = never)." default:"100" env:"DAMSELFLY_AUTO_AOF_REWRITE_PERCENTAGE"`
	AutoRewriteMinSize memory `name:"auto-aof-rewrite-min-size" help:"Smallest AOF that is rewritten automatically." default:"64mb" env:"DAMSELFLY_AUTO_AOF_REWRITE_MIN_SIZE"`
	UseRDBPreamble     yesno  `name:"aof-use-rdb-preamble" help:"Write the rewritten base as an RDB (yes/no)." default:"yes" env:"DAMSELFLY_AOF_USE_RDB_PREAMBLE"`
	LoadTruncated      yesno  `name:"aof-load-truncated" help:"Load an AOF whose last command is cut off, dropping it (yes/no)." default:"yes" env:"DAMSELFLY_AOF_LOAD_TRUNCATED"`
	TimestampEnabled   yesno  `name:"aof-timestamp-enabled" help:"Annotate the AOF with timestamps (yes/no)." default:"no" env:"DAMSELFLY_AOF_TIMESTAMP_ENABLED"`
}

func (f *aofFlags) config() server.AOFConfig {
	pct := f.AutoRewritePercent
	if pct == 0 {
		pct = -1 // 0 = never, as in Redis (server.AOFConfig takes 0 as the default)
	}
	return server.AOFConfig{
		Enabled: bool(f.Appendonly), Fsync: f.Appendfsync, FileName: f.Appendfilename, DirName: f.Appenddirname,
		AutoPercent: pct, AutoMinSize: int64(f.AutoRewriteMinSize),
		NoRDBPreamble: !bool(f.UseRDBPreamble), NoLoadTruncated: !bool(f.LoadTruncated), Timestamps: bool(f.TimestampEnabled),
	}
}
