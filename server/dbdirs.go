package server

import (
	"strings"

	"github.com/damselflydb/damselfly/snapshot"
)

// Snapshot striping (--dbdirs dir1,dir2; CONFIG GET/SET dbdirs, a
// protected config like dir): a native save spreads its per-shard files
// round-robin over these directories, so saves and loads use several
// disks; the summary stays at dir/dbfilename and names where each file
// lives (snapshot/stripe.go). RDB saves ignore it. A change applies to
// the next save; loading always follows the summary.

// CheckDBDirs validates --dbdirs (existing directories, each once).
func CheckDBDirs(dirs []string) error {
	_, err := snapshot.CheckStripeDirs(dirs)
	return err
}

func (s *Server) initDBDirs(cfg Config) {
	dirs, err := snapshot.CheckStripeDirs(cfg.DBDirs)
	if err != nil {
		// The command line checks first (CheckDBDirs); an embedder's bad
		// list is logged and striping stays off rather than half-applied.
		s.log.Error("--dbdirs ignored", "err", err)
		dirs = nil
	}
	s.dbDirs.Store(&dirs)
}

// stripeDirs is the current --dbdirs (nil: no striping).
func (s *Server) stripeDirs() []string {
	if p := s.dbDirs.Load(); p != nil && len(*p) > 0 {
		return *p
	}
	return nil
}

func dbDirsParam(m map[string]configParam) {
	m["dbdirs"] = configParam{
		get: func(s *Server) string { return strings.Join(s.stripeDirs(), ",") },
		set: func(s *Server, v string) error {
			var list []string
			if v != "" {
				list = strings.Split(v, ",")
			}
			dirs, err := snapshot.CheckStripeDirs(list)
			if err != nil {
				return err
			}
			s.dbDirs.Store(&dirs)
			return nil
		},
	}
}
