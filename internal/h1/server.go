package h1

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Server serves an http.Handler over HTTP/1.1 on the connections of a
// listener, one goroutine per connection, which reads each request, runs
// the handler and writes the response; keep-alive connections are
// reused, pipelined requests answered in order.
//
// Unlike net/http's server it does not read the connection on a goroutine
// of its own while a handler runs: a request's context learns that the
// client went away only once something asks for it (its Done, Err or a
// context derived from it), and only then is the connection watched, until
// the handler returns. A handler that never waits on its context costs no
// goroutine and no wake-up beyond the connection's own.
//
// It speaks HTTP/1.0 and HTTP/1.1 only: no TLS, no HTTP/2; a handler
// that switches protocols takes the connection over through the
// response's http.Hijacker, as on net/http's. What it cannot parse it answers 400 and closes; request
// headers over MaxHeaderBytes 431; an HTTP version other than 1.x 505; an
// Expect other than 100-continue 417. 100 Continue is sent when the
// handler first reads the body, as net/http does.
//
// The zero value has no handler; set Handler before Serve. A Server is
// safe for concurrent use; its fields must not change once Serve runs.
type Server struct {
	// Handler serves every request.
	Handler http.Handler
	// ReadHeaderTimeout bounds reading a request's line and headers, from
	// its first byte. Zero means no limit.
	ReadHeaderTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a keep-alive
	// connection. Zero means no limit, as net/http's with no ReadTimeout.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps the request line and headers. Zero means
	// http.DefaultMaxHeaderBytes (1 MiB).
	MaxHeaderBytes int
	// DisableKeepAlives answers every request with Connection: close.
	DisableKeepAlives bool
	// WatchDelay, when above zero, puts off watching a connection for its
	// client's end until a request whose context asked for it has run that
	// long: a request answered sooner costs no watch at all, and a client
	// that leaves is seen up to WatchDelay late. Zero watches at once.
	WatchDelay time.Duration
	// ConnContext, when not nil, derives the context of a new
	// connection's requests from the server's.
	ConnContext func(ctx context.Context, c net.Conn) context.Context
	// ErrorLog receives handler panics other than http.ErrAbortHandler.
	// Nil means the log package's standard logger.
	ErrorLog *log.Logger

	mu        sync.Mutex
	listeners map[*net.Listener]struct{}
	conns     map[*serverConn]struct{}
	closing   bool
	closed    atomic.Bool   // closing, for connections to read without mu
	drained   chan struct{} // closed when closing and conns is empty
}

// Serve accepts connections on ln and serves each on its own goroutine
// until Close or Shutdown, after which it returns http.ErrServerClosed;
// it returns any other error Accept fails with, after closing ln.
func (s *Server) Serve(ln net.Listener) error {
	if !s.track(&ln, true) {
		ln.Close()
		return http.ErrServerClosed
	}
	defer s.track(&ln, false)
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.isClosing() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() { // a temporary failure: EMFILE and the like
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			ln.Close()
			return err
		}
		backoff = 0
		sc := &serverConn{srv: s, rwc: c}
		if !s.addConn(sc) {
			c.Close()
			return http.ErrServerClosed
		}
		go sc.serve()
	}
}

// Close closes every listener and every connection, idle or not, and
// returns at once; handlers still running see their connection fail.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.closeListeners()
	for c := range s.conns {
		c.rwc.Close()
	}
	return err
}

// Shutdown closes every listener and every idle connection, then waits
// for the connections serving a request to finish it and close, or for
// ctx to be done, whose error it then returns.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	err := s.closeListeners()
	for c := range s.conns {
		if c.idle.Load() {
			c.rwc.Close()
		}
	}
	drained := s.drained
	s.mu.Unlock()
	select {
	case <-drained:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// closeListeners marks s closing and closes its listeners; s.mu is held.
func (s *Server) closeListeners() error {
	if !s.closing {
		s.closing = true
		s.closed.Store(true)
		s.drained = make(chan struct{})
		if len(s.conns) == 0 {
			close(s.drained)
		}
	}
	var err error
	for ln := range s.listeners {
		if e := (*ln).Close(); e != nil && err == nil && !errors.Is(e, net.ErrClosed) {
			err = e
		}
		delete(s.listeners, ln)
	}
	return err
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// track adds or removes ln; adding fails once s is closing.
func (s *Server) track(ln *net.Listener, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		delete(s.listeners, ln)
		return true
	}
	if s.closing {
		return false
	}
	if s.listeners == nil {
		s.listeners = map[*net.Listener]struct{}{}
	}
	s.listeners[ln] = struct{}{}
	return true
}

func (s *Server) addConn(c *serverConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	if s.conns == nil {
		s.conns = map[*serverConn]struct{}{}
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) removeConn(c *serverConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	if s.closing && len(s.conns) == 0 {
		select {
		case <-s.drained:
		default:
			close(s.drained)
		}
	}
}

func (s *Server) maxHeaderBytes() int {
	if s.MaxHeaderBytes > 0 {
		return s.MaxHeaderBytes
	}
	return http.DefaultMaxHeaderBytes
}

func (s *Server) logf(format string, args ...any) {
	if s.ErrorLog != nil {
		s.ErrorLog.Printf(format, args...)
		return
	}
	log.Printf(format, args...)
}
