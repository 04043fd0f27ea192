package limiterproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"stampede/internal/h1"
)

// ServerOptions configure NewServer and Listen. Every zero value means the
// default named, chosen as nginx's defaults where nginx has one.
type ServerOptions struct {
	// ReadHeaderTimeout bounds reading a request's headers (nginx
	// client_header_timeout). Zero means 60s.
	ReadHeaderTimeout time.Duration
	// ClientBodyTimeout bounds each wait for the next bytes of a request's
	// body (nginx client_body_timeout); a client silent that long is cut
	// off without an answer, as nginx does. Zero means 60s.
	ClientBodyTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long (nginx
	// keepalive_timeout). Zero means 75s.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps the request line and headers; over it the server
	// answers 431. Zero means 32 KiB (nginx large_client_header_buffers
	// 4 8k).
	MaxHeaderBytes int
	// MaxConns bounds the connections served at once, and so the
	// goroutines serving them; further connections wait in the kernel's
	// accept queue. Zero means 4096.
	MaxConns int
	// ErrorLog receives the server's own errors (TLS handshakes, panics in
	// handlers other than http.ErrAbortHandler). Nil discards them.
	ErrorLog *log.Logger
	// WatchDelay, for NewLeanServer, puts off watching a client's
	// connection for its end until its request has run that long
	// (h1.Server.WatchDelay): a request answered sooner costs no watch,
	// and a client that leaves is seen up to WatchDelay late. A limit_conn
	// slot it holds is freed for a request it would turn away at once
	// even so (see gone.go). Zero watches at once; NewServer always does.
	WatchDelay time.Duration
}

// ProxyWatchDelay is the WatchDelay `stampede proxy` serves with: far
// beyond a quick request's time through the proxy, far below an app's.
const ProxyWatchDelay = 50 * time.Millisecond

func (o ServerOptions) withDefaults() ServerOptions {
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = 60 * time.Second
	}
	if o.ClientBodyTimeout <= 0 {
		o.ClientBodyTimeout = 60 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 75 * time.Second
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = 32 << 10
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 4096
	}
	if o.ErrorLog == nil {
		o.ErrorLog = log.New(io.Discard, "", 0)
	}
	return o
}

// NewServer returns a server for h hardened as one put in front of a real
// app: header read timeout, body read timeout, header size cap (431 over
// it) and idle timeout from opts, and the requests nginx refuses before
// any module sees them refused with nginx's status (CONNECT, TRACE,
// "OPTIONS *", an empty Host, ambiguous framing; see refusal). It sets no
// ReadTimeout or WriteTimeout: a limited request may legitimately take
// minutes. Serve it on a listener from Listen, which bounds the
// connections and lets the server see the framing Go's parser hides.
func NewServer(h http.Handler, opts ServerOptions) *http.Server {
	opts = opts.withDefaults()
	return &http.Server{
		Handler:                      &guard{next: h, bodyTimeout: opts.ClientBodyTimeout},
		ReadHeaderTimeout:            opts.ReadHeaderTimeout,
		IdleTimeout:                  opts.IdleTimeout,
		MaxHeaderBytes:               opts.MaxHeaderBytes,
		ErrorLog:                     opts.ErrorLog,
		ConnContext:                  connContext, // see guard.go and gone.go
		DisableGeneralOptionsHandler: true,        // "OPTIONS *" is nginx's 400, not Go's 200
	}
}

// NewLeanServer returns the server NewServer does, with the same guard,
// limits and timeouts, on h1.Server rather than net/http's: it reads a
// connection for its client's end only while a request's context is
// waited on (a request being limited or proxied always is), and costs no
// goroutine of its own otherwise. It speaks HTTP/1.x alone and answers no
// trailers, and refuses an empty Host on HTTP/1.1, as nginx does anyway;
// a protocol switch (Upgrade) is spliced as on NewServer's. `stampede
// proxy` serves on it.
func NewLeanServer(h http.Handler, opts ServerOptions) *h1.Server {
	s := NewServer(h, opts) // the one configuration, read off net/http's
	return &h1.Server{Handler: s.Handler, ReadHeaderTimeout: s.ReadHeaderTimeout, IdleTimeout: s.IdleTimeout,
		MaxHeaderBytes: s.MaxHeaderBytes, ErrorLog: s.ErrorLog, ConnContext: s.ConnContext, WatchDelay: opts.WatchDelay}
}

// Listen listens on the TCP address addr with at most opts.MaxConns
// connections open at once. Its errors name the address and the cause
// plainly: "listen 127.0.0.1:8080: address already in use".
func Listen(addr string, opts ServerOptions) (net.Listener, error) {
	opts = opts.withDefaults()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, listenError(addr, err)
	}
	return LimitListener(ln, opts.MaxConns), nil
}

// listenError strips net.Listen's error down to the address and the
// system's reason, keeping the chain for errors.Is.
func listenError(addr string, err error) error {
	var se *os.SyscallError
	if errors.As(err, &se) {
		var errno syscall.Errno
		if errors.As(se.Err, &errno) {
			return fmt.Errorf("listen %s: %w", addr, errno)
		}
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return fmt.Errorf("listen %s: %w", addr, oe.Err)
	}
	return fmt.Errorf("listen %s: %w", addr, err)
}

// LimitListener returns a listener that has at most n connections open at
// once: Accept waits for a connection to close before it accepts another.
// Each accepted connection gives its place back exactly once, when first
// closed; a failed Accept gives back the place it took. Close unblocks a
// waiting Accept. n < 1 means 1.
func LimitListener(l net.Listener, n int) net.Listener {
	if n < 1 {
		n = 1
	}
	return &limitListener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// acquire takes a place, or reports false once the listener is closed.
func (l *limitListener) acquire() bool {
	select {
	case <-l.done:
		return false
	case l.sem <- struct{}{}:
		return true
	}
}

func (l *limitListener) release() { <-l.sem }

func (l *limitListener) Accept() (net.Conn, error) {
	if !l.acquire() {
		// Accept on the closed listener for its error (net.ErrClosed).
		c, err := l.Listener.Accept()
		if err == nil {
			c.Close()
			err = net.ErrClosed
		}
		return nil, err
	}
	c, err := l.Listener.Accept()
	if err != nil {
		l.release()
		return nil, err
	}
	return &limitConn{Conn: c, release: l.release}, nil
}

func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// InUse reports the places taken now; for tests and metrics.
func (l *limitListener) InUse() int { return len(l.sem) }

type limitConn struct {
	net.Conn
	released atomic.Bool
	release  func()
	scan     reqScan
}

// Read reads from the connection, noting each request's framing for
// NewServer (see reqScan).
func (c *limitConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.scan.feed(p[:n])
	}
	return n, err
}

// CloseWrite half-closes the connection, so that a server that answered
// a request it refused can go on reading what the client still sends
// before it closes (see h1's refuse, net/http's closeWriteAndWait).
func (c *limitConn) CloseWrite() error { return h1.CloseWrite(c.Conn) }

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	if c.released.CompareAndSwap(false, true) {
		c.release()
	}
	return err
}

// server is what Serve serves: *http.Server or *h1.Server.
type server interface {
	Serve(net.Listener) error
	Shutdown(context.Context) error
	Close() error
}

// Serve serves srv on ln until ctx is done, then shuts it down gracefully:
// it stops accepting, lets requests in flight finish for up to grace, then
// closes what is left. It returns nil after a shutdown caused by ctx, or
// the error that stopped the server.
func Serve(ctx context.Context, srv server, ln net.Listener, grace time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		srv.Close()
	}
	<-errc // http.ErrServerClosed
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: requests still in flight after %v were cut off", grace)
	}
	return err
}
