package fakebackend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"

	"stampede/workerpool"
)

// Gate returns ln wrapped so that it accepts a connection only when one of
// b's workers may take its request, as a gunicorn worker calls accept(2)
// only when it is idle (a gthread worker: while it holds fewer than
// WorkerConnections). Connections that arrive meanwhile wait in ln's own
// queue: for a TCP listener the kernel's accept queue, where Linux drops
// the SYNs over the backlog (see SetBacklog) and the client's kernel sends
// them again on SYNRetry's schedule; for an in-memory listener, whatever
// queue it models. Serve gates its listener itself when b closes every
// connection (Options.KeepAlive false); requests that reach b's ServeHTTP
// another way go through its pool's backlog instead.
//
// The gated listener's connections must be served by an http.Server whose
// ConnContext is b.ConnContext. Accept returns net.ErrClosed once b is
// closed.
func (b *Backend) Gate(ln net.Listener) net.Listener { return &gate{Listener: ln, b: b} }

// gate is the listener Gate returns.
type gate struct {
	net.Listener
	b *Backend
}

func (g *gate) Accept() (net.Conn, error) {
	if err := g.b.claim(); err != nil {
		return nil, err
	}
	c, err := g.Listener.Accept()
	if err != nil {
		g.b.mu.Lock()
		g.b.claims--
		g.b.freedWorker()
		g.b.mu.Unlock()
		return nil, err
	}
	return &claimedConn{Conn: c, b: g.b}, nil
}

// claim waits until a worker may take one more connection and reserves it.
func (b *Backend) claim() error {
	for {
		b.mu.Lock()
		now := b.now()
		b.retire(now)
		ok := b.pool.Free(now) > b.claims
		if b.pool.Threads() > 1 {
			busy, queued := b.pool.Busy()
			ok = busy+queued+b.claims < b.pool.Workers()*max(workerpool.WorkerConnections, b.pool.Threads())
		}
		if ok {
			b.claims++
		}
		b.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-b.freed:
		case <-b.quit:
			return net.ErrClosed
		}
	}
}

// claimedConn is a connection the gate accepted for a worker. Its claim is
// used by its first request, or given back when it closes without one.
type claimedConn struct {
	net.Conn
	b    *Backend
	used bool // guarded by b.mu
	once sync.Once
}

// useClaim turns cc's reservation into its request's; b.mu is held.
func (b *Backend) useClaim(cc *claimedConn) {
	if !cc.used {
		cc.used = true
		b.claims--
	}
}

func (c *claimedConn) Close() error {
	c.once.Do(func() {
		c.b.mu.Lock()
		if !c.used {
			c.b.useClaim(c)
			c.b.freedWorker()
		}
		c.b.mu.Unlock()
	})
	return c.Conn.Close()
}

// claimKey is the context key of a request's claimedConn.
type claimKey struct{}

// ConnContext is the http.Server ConnContext hook a server of a gated
// listener needs: it tells b's ServeHTTP which worker a connection was
// accepted for.
func (b *Backend) ConnContext(ctx context.Context, c net.Conn) context.Context {
	if cc, ok := c.(*claimedConn); ok {
		return context.WithValue(ctx, claimKey{}, cc)
	}
	return ctx
}

// Backlog returns the listen(2) backlog b's configuration asks for: the
// pool's Backlog, DefaultBacklog for zero and 0 for a negative one (with
// which Linux still queues one connection).
func (b *Backend) Backlog() int { return b.pool.Config().ListenBacklog() }

// SetBacklog sets the listen(2) backlog of a TCP listener to n, listening
// again on its socket, which Linux allows and takes as a new backlog (Go
// listens with the system's largest). Its accept queue then holds n+1
// connections, as gunicorn's does with --backlog n. Other listeners are
// left alone.
func SetBacklog(ln net.Listener, n int) error {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return nil
	}
	rc, err := tl.SyscallConn()
	if err != nil {
		return fmt.Errorf("set listen backlog %d on %s: %w", n, ln.Addr(), err)
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) { lerr = syscall.Listen(int(fd), n) }); err != nil {
		return fmt.Errorf("set listen backlog %d on %s: %w", n, ln.Addr(), err)
	}
	if lerr != nil {
		return fmt.Errorf("set listen backlog %d on %s: %w", n, ln.Addr(), lerr)
	}
	return nil
}

// ErrOverflowWallTime is OverflowFidelity's answer for a TCP listener at a
// time scale other than 1.
var ErrOverflowWallTime = errors.New("the kernel retransmits a dropped SYN on wall time, which the time scale does not scale")

// ErrOverflowEmulated is OverflowFidelity's answer when Serve cannot gate
// its listener (keep-alive connections).
var ErrOverflowEmulated = errors.New("keep-alive connections are accepted whatever the backlog; the backend holds a connection over it on the SYN schedule itself, so the proxy's read timeout, not its connect timeout, runs meanwhile")

// OverflowFidelity reports whether Serve on ln plays a backlog overflow as
// the model does (nil), or why not: on a TCP listener the backlog is the
// kernel's, whose SYN retransmissions run on wall time, so at a TimeScale
// other than 1 a dropped connection is retried too late in model time
// (ErrOverflowWallTime); with KeepAlive the listener is not gated and the
// backend emulates the backlog behind an accepted connection
// (ErrOverflowEmulated). A listener of another kind (an in-memory one that
// models the queue and the SYN schedule in model time) is taken as
// faithful. A live engine adds the reason to a run's validity when the
// backlog overflowed.
func (b *Backend) OverflowFidelity(ln net.Listener) error {
	if b.keepAlive {
		return ErrOverflowEmulated
	}
	if _, tcp := ln.(*net.TCPListener); tcp && b.clock.Scale.Factor() != 1 {
		return ErrOverflowWallTime
	}
	return nil
}
