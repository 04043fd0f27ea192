package h1

import (
	"bufio"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"time"
)

// A server that does its own I/O (limiterproxy's epoll loops) reads and
// answers the requests it can without this package's goroutines, and hands
// the rest to a Server: ServeConn takes a connection it accepted,
// ParsePlainRequest reads a request head as the Server reads it, and a
// Responder writes an answer byte for byte as the Server writes it.

// ServeConn serves c as Serve serves a connection it accepted, on a
// goroutine of its own, and returns at once; after Close or Shutdown it
// closes c and returns http.ErrServerClosed. What c's Read returns first
// (the bytes its owner read already, say) is read as the start of its
// first request.
func (s *Server) ServeConn(c net.Conn) error {
	sc := &serverConn{srv: s, rwc: c}
	if !s.addConn(sc) {
		c.Close()
		return http.ErrServerClosed
	}
	go sc.serve()
	return nil
}

// ParsePlainRequest returns the request the Server would read from the
// start of head, and its head's length with the blank line, when head
// holds a whole plain request head without a body (see readPlainRequest);
// false for any other, which only the Server's own reading answers as it
// would. The request's Body is http.NoBody; RemoteAddr and the context
// are not set.
func ParsePlainRequest(br *bufio.Reader) (*http.Request, bool) {
	return readPlainRequest(br)
}

// CheckRequest returns the status the Server refuses req with before its
// handler sees it, and why; 0 if it serves it.
func CheckRequest(req *http.Request) (int, string) { return check(req) }

// Responder writes the response a handler makes the way the Server
// writes it to the handler's connection: the same status line, header
// lines, Date, framing and Connection header. It is for one goroutine at
// a time; its zero value is not usable (see NewResponder).
type Responder struct {
	c  serverConn
	w  response // the response being made, reused
	to writerTo
}

// writerTo is the writer a Responder's buffer flushes to, set per call.
type writerTo struct{ w io.Writer }

func (t *writerTo) Write(p []byte) (int, error) { return t.w.Write(p) }

// NewResponder returns a Responder that answers as s does: after s's
// Shutdown or Close, every response says "Connection: close".
func NewResponder(s *Server) *Responder {
	r := &Responder{}
	r.c.srv = s
	r.c.rwc = noConn{}
	r.c.r.remain = math.MaxInt64
	r.c.bw = bufio.NewWriterSize(&r.to, 4<<10)
	return r
}

// Respond runs serve with a response writer for req, whose body must be
// http.NoBody, and writes to out what the Server would have written to
// req's connection. keep reports whether the connection may carry the
// next request. A serve that panics with http.ErrAbortHandler leaves on
// out what it had flushed and reports aborted: the connection must then
// close, as the Server closes it. Hijacking is refused. Any other panic
// goes on.
func (r *Responder) Respond(out io.Writer, req *http.Request, serve func(w http.ResponseWriter)) (keep, aborted bool) {
	c := &r.c
	r.to.w = out
	c.bw.Reset(&r.to)
	defer func() { r.to.w = nil }()
	r.w = response{c: c, req: req, contentLength: -1}
	w := &r.w
	w.closeAfter = req.Close || c.srv.DisableKeepAlives
	func() {
		defer func() {
			if v := recover(); v != nil {
				if v != http.ErrAbortHandler {
					panic(v)
				}
				aborted = true
				c.bw.Reset(&r.to) // drop what was not flushed
			}
		}()
		serve(w)
	}()
	if aborted {
		return false, true
	}
	w.finish()
	if w.err != nil {
		return false, false
	}
	if err := c.bw.Flush(); err != nil {
		return false, false
	}
	return !w.closeAfter, false
}

// noConn is a Responder's connection: it has none to read, hijack or set
// deadlines on.
type noConn struct{}

var errNoConn = errors.New("h1: a Responder has no connection")

func (noConn) Read([]byte) (int, error)         { return 0, errNoConn }
func (noConn) Write([]byte) (int, error)        { return 0, errNoConn }
func (noConn) Close() error                     { return nil }
func (noConn) LocalAddr() net.Addr              { return nil }
func (noConn) RemoteAddr() net.Addr             { return nil }
func (noConn) SetDeadline(time.Time) error      { return errNoConn }
func (noConn) SetReadDeadline(time.Time) error  { return errNoConn }
func (noConn) SetWriteDeadline(time.Time) error { return errNoConn }
