//go:build !linux

package server

import (
	"errors"
	"net"
)

// eventLoop is Linux-only (epoll); elsewhere every connection has its own
// goroutine.
type eventLoop struct{}

func (s *Server) startLoops() ([]*eventLoop, error) { return nil, nil }

func (l *eventLoop) adopt(c *Client, tc *net.TCPConn) error {
	return errors.New("no event loops on this platform")
}

func (l *eventLoop) requestClose(c *Client) {}

func (l *eventLoop) stop() {}
