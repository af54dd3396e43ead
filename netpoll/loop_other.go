//go:build !linux

package netpoll

import (
	"errors"
	"log/slog"
	"net"
	"syscall"
)

// Loop is Linux-only (epoll); elsewhere New fails and callers serve every
// connection on a goroutine of its own.
type Loop struct{}

// ErrStopped is returned by Adopt once the loop is stopping.
var ErrStopped = errors.New("netpoll: event loop stopped")

// Conn is a connection a loop can adopt (TCP or Unix socket).
type Conn interface {
	syscall.Conn
	Close() error
}

var errUnsupported = errors.New("netpoll: no event loops on this platform")

func New(*slog.Logger) (*Loop, error)                { return nil, errUnsupported }
func (l *Loop) Adopt(Conn, Handler, func(int)) error { return errUnsupported }
func (l *Loop) RequestClose(int, Handler)            {}
func (l *Loop) Stop()                                {}
func (l *Loop) Run()                                 {}
func (l *Loop) SetBarrier(Barrier)                   {}
func FileConn(int) (net.Conn, error)                 { return nil, errUnsupported }

// Read is never called off Linux (no loop serves a connection there).
func Read(int, []byte) (int, syscall.Errno) { return 0, syscall.ENOSYS }

// IOUringOptions tunes NewIOUring (Linux only).
type IOUringOptions struct{ SingleShot bool }

func NewIOUring(*slog.Logger, IOUringOptions) (*Loop, error) { return nil, errUnsupported }
func (l *Loop) Backend() string                              { return "none" }
