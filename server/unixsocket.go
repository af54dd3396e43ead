package server

import (
	"fmt"
	"net"
	"os"
	"strconv"
)

// Unix-socket clients (Config.UnixSocket) are served like TCP ones: the same
// event loops (netpoll adopts any stream socket), the same client limits and
// commands. Two things differ, as in Redis: a Unix socket is local, so
// protected mode never refuses it (only TCP peers are checked), and the
// socket file's permissions are set to Config.UnixSocketPerm after it is
// created (Redis's unixsocketperm; 0 keeps what the umask gave).

// ParseUnixSocketPerm parses a unixsocketperm value the way Redis does: an
// octal number from 0 to 777 ("700", "0770"), 0 meaning "leave the
// permissions the umask gives".
func ParseUnixSocketPerm(s string) (os.FileMode, error) {
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil || n > 0o777 {
		return 0, fmt.Errorf("argument couldn't be parsed as an octal number from 0 to 777")
	}
	return os.FileMode(n), nil
}

// listenUnix replaces any stale socket file at path (as Redis does), listens
// there and applies perm when it is not 0.
func listenUnix(path string, perm os.FileMode) (net.Listener, error) {
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if perm != 0 {
		if err := os.Chmod(path, perm); err != nil {
			ln.Close()
			return nil, fmt.Errorf("unixsocketperm: %w", err)
		}
	}
	return ln, nil
}

// unixSocketParams are the read-only CONFIG parameters of the Unix socket
// (immutable in Redis too).
func unixSocketParams(m map[string]configParam) {
	m["unixsocket"] = configParam{get: func(s *Server) string { return s.unixPath }}
	m["unixsocketperm"] = configParam{get: func(s *Server) string { return strconv.FormatUint(uint64(s.unixPerm), 8) }}
}
