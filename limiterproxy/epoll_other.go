//go:build !linux

package limiterproxy

import (
	"context"
	"errors"
	"net"
	"net/http"
)

// EpollServer is `stampede proxy --server epoll`, which only Linux has.
type EpollServer struct{}

// ErrNoEpoll is NewEpollServer's error on a system without epoll.
var ErrNoEpoll = errors.New("epoll server: epoll is Linux's; use the default server here")

// NewEpollServer fails: see the Linux build.
func NewEpollServer(http.Handler, ServerOptions, int) (*EpollServer, error) { return nil, ErrNoEpoll }

// ListenReusePort is Listen here.
func ListenReusePort(addr string, opts ServerOptions) (net.Listener, error) {
	return Listen(addr, opts)
}

func (*EpollServer) Lean() bool                     { return false }
func (*EpollServer) Serve(net.Listener) error       { return ErrNoEpoll }
func (*EpollServer) Shutdown(context.Context) error { return nil }
func (*EpollServer) Close() error                   { return nil }
