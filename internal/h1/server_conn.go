package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxPostHandlerRead bounds the unread request body the server discards
// after the handler to keep the connection; a longer one closes it. nginx
// discards all of a body it does not read, up to client_max_body_size
// (1m by default), past which it answers 413 first.
const maxPostHandlerRead = 1 << 20

// serverConn is one connection of a Server and the state its goroutine keeps
// across requests.
type serverConn struct {
	srv    *Server
	rwc    net.Conn
	remote string
	idle   atomic.Bool // waiting for a request; Shutdown closes it
	r      serverReader
	br     *bufio.Reader
	bw     *bufio.Writer
	keys   []string    // a response's header keys, sorted; reused
	header http.Header // a response's header map; reused
	head   []byte      // a response's header lines as WriteHeader saw them; reused
	// deadline says a read deadline is set that a handler's reads must
	// not meet: reading the body or watching clears it first.
	deadline bool
	hold     [bufferBeforeCommit]byte // a response's body held back before commit
	date     [len(http.TimeFormat)]byte
	dateSec  int64

	// mu guards the watch, which a request's context may ask for from any
	// goroutine.
	mu       sync.Mutex
	cur      *reqContext   // the context of the request being served
	watch    *reqContext   // cur, once it asked for a watch
	watching chan struct{} // closed when the watching goroutine ends
	stopping atomic.Bool   // set while stopWatch aborts the watching read
	bodyEOF  bool          // the request's body is read to its end
	finished bool          // the request's handler has returned
	hijacked bool          // the handler took the connection over
	// delay starts the watch WatchDelay after it was asked for; delayed
	// says it is set for the request being served.
	delay   *time.Timer
	delayed bool
}

// serverReader is what the bufio.Reader reads: the connection, with the
// byte a watch read first and a limit on a request's headers.
type serverReader struct {
	c       *serverConn
	remain  int64 // bytes left before the header limit
	hit     bool  // the header limit was reached
	hasByte bool
	byteBuf [1]byte
}

func (cr *serverReader) Read(p []byte) (int, error) {
	if cr.remain <= 0 {
		cr.hit = true
		return 0, io.EOF
	}
	if int64(len(p)) > cr.remain {
		p = p[:cr.remain]
	}
	if cr.hasByte && len(p) > 0 {
		p[0] = cr.byteBuf[0]
		cr.hasByte = false
		cr.remain--
		return 1, nil
	}
	n, err := cr.c.rwc.Read(p)
	cr.remain -= int64(n)
	return n, err
}

// serverMark is the ServerContextKey value of every request this package
// serves: a marker, not a server to configure.
var serverMark = new(http.Server)

var (
	readerPool sync.Pool
	writerPool sync.Pool
)

func (c *serverConn) serve() {
	defer func() {
		if v := recover(); v != nil {
			c.logPanic(v)
		}
		if c.isHijacked() {
			return // the connection and its buffers are the handler's
		}
		c.rwc.Close()
		c.release()
		c.srv.removeConn(c)
	}()
	c.remote = c.rwc.RemoteAddr().String()
	c.r.c = c
	c.r.remain = math.MaxInt64
	if v := readerPool.Get(); v != nil {
		c.br = v.(*bufio.Reader)
		c.br.Reset(&c.r)
	} else {
		c.br = bufio.NewReaderSize(&c.r, 4<<10)
	}
	if v := writerPool.Get(); v != nil {
		c.bw = v.(*bufio.Writer)
		c.bw.Reset(c.rwc)
	} else {
		c.bw = bufio.NewWriterSize(c.rwc, 4<<10)
	}
	ctx := context.WithValue(context.Background(), http.LocalAddrContextKey, c.rwc.LocalAddr())
	// Handlers such as httputil.ReverseProxy look for ServerContextKey to
	// learn that they may abort a response with http.ErrAbortHandler, as
	// this server handles it; without it, a proxied body cut off midway
	// would be ended as if complete.
	ctx = context.WithValue(ctx, http.ServerContextKey, serverMark)
	if c.srv.ConnContext != nil {
		ctx = c.srv.ConnContext(ctx, c.rwc)
	}
	for first := true; ; first = false {
		if !c.awaitRequest(first) {
			return
		}
		if !c.serveRequest(ctx) {
			return
		}
	}
}

// release gives the buffers back; the goroutine that read and wrote them
// is done.
func (c *serverConn) release() {
	c.br.Reset(nil)
	readerPool.Put(c.br)
	c.bw.Reset(nil)
	writerPool.Put(c.bw)
	c.br, c.bw = nil, nil
}

// awaitRequest waits for the first byte of the next request under the
// idle timeout (the header timeout for a connection's first), and reports
// whether one came.
func (c *serverConn) awaitRequest(first bool) bool {
	c.idle.Store(true)
	defer c.idle.Store(false)
	if c.srv.closed.Load() {
		return false
	}
	if c.br.Buffered() > 0 || c.r.hasByte {
		return true
	}
	d := c.srv.IdleTimeout
	if first {
		d = c.srv.ReadHeaderTimeout
	}
	switch {
	case d > 0:
		c.rwc.SetReadDeadline(time.Now().Add(d))
		c.deadline = true
	case c.deadline:
		// No idle timeout: the wait is unbounded, as in net/http, and a
		// plain request, read from the buffer, leaves the last deadline
		// set.
		c.rwc.SetReadDeadline(time.Time{})
		c.deadline = false
	}
	_, err := c.br.Peek(1)
	return err == nil
}

// serveRequest reads one request and answers it, and reports whether the
// connection can carry another.
func (c *serverConn) serveRequest(ctx context.Context) bool {
	req, err := c.readRequest()
	if err != nil {
		switch {
		case c.r.hit:
			c.refuse(http.StatusRequestHeaderFieldsTooLarge, "")
		case errors.Is(err, io.EOF), isNetError(err):
			// The client went away or was too slow: no answer, as
			// net/http gives none.
		case strings.Contains(err.Error(), "unsupported transfer encoding"):
			c.refuse(http.StatusNotImplemented, "unsupported transfer encoding")
		default:
			c.refuse(http.StatusBadRequest, "")
		}
		return false
	}
	if status, why := check(req); status != 0 {
		c.refuse(status, why)
		return false
	}
	// The request's context and response writer in one allocation.
	x := &struct {
		rc reqContext
		w  response
	}{rc: reqContext{parent: ctx, c: c}}
	rc := &x.rc
	c.mu.Lock()
	c.cur, c.watch, c.bodyEOF, c.finished = rc, nil, req.Body == http.NoBody, false
	c.mu.Unlock()
	*req = *req.WithContext(rc) // the copy WithContext makes stays on the stack
	req.RemoteAddr = c.remote
	w := &x.w
	*w = response{c: c, req: req, contentLength: -1}
	if req.Body != http.NoBody {
		b := &requestBody{c: c, w: w, rc: req.Body, length: req.ContentLength}
		if expectsContinue(req) {
			b.wantContinue = true
		}
		req.Body = b
		w.body = b
	}
	w.closeAfter = req.Close || c.srv.DisableKeepAlives || isH2Preface(req)

	if !c.runHandler(w, req) || c.isHijacked() {
		c.stopWatch()
		return false
	}
	w.finish()
	c.stopWatch()
	if w.err != nil {
		return false
	}
	if w.closeAfter {
		if err := c.bw.Flush(); err == nil {
			CloseWrite(c.rwc)
		}
		return false
	}
	if c.bw.Flush() != nil {
		return false
	}
	if w.body != nil {
		// The answer said keep-alive; a body that did not end in time
		// closes the connection, and one longer than the server discards
		// closes it once the client has sent the rest, or at linger's
		// bounds, so that the reset of a close with bytes unread cannot
		// overtake the answer.
		switch err := w.body.drain(); {
		case err == errBodyOver:
			c.linger()
			return false
		case err != nil:
			return false
		}
	}
	return true
}

// readRequest reads the next request: a plain one whose head is in the
// buffer already (nearly every one) without a read, and so without the
// header timeout; any other with http.ReadRequest under it and the
// header limit.
func (c *serverConn) readRequest() (*http.Request, error) {
	if req, ok := readPlainRequest(c.br); ok {
		return req, nil
	}
	if d := c.srv.ReadHeaderTimeout; d > 0 {
		c.rwc.SetReadDeadline(time.Now().Add(d))
		c.deadline = true
	}
	c.r.hit = false
	c.r.remain = int64(c.srv.maxHeaderBytes()) + 4096 // as net/http, room for the request line and bufio's read-ahead
	defer func() { c.r.remain = math.MaxInt64 }()
	return http.ReadRequest(c.br)
}

// runHandler runs the handler and reports whether it returned rather than
// panicked. A panic drops the connection without a response, or with what
// had been flushed of one, as net/http does.
func (c *serverConn) runHandler(w *response, req *http.Request) (ok bool) {
	defer func() {
		if ok {
			return
		}
		if v := recover(); v != nil && v != http.ErrAbortHandler {
			c.logPanic(v)
		}
		c.bw.Reset(c.rwc) // drop what was not flushed
	}()
	c.srv.Handler.ServeHTTP(w, req)
	return true
}

func (c *serverConn) logPanic(v any) {
	buf := make([]byte, 64<<10)
	buf = buf[:runtime.Stack(buf, false)]
	c.srv.logf("h1: panic serving %v: %v\n%s", c.remote, v, buf)
}

// refuse answers a request the server will not serve and closes.
func (c *serverConn) refuse(status int, why string) {
	text := fmt.Sprintf("%d %s", status, http.StatusText(status))
	if why != "" {
		text += ": " + why
	}
	c.rwc.SetWriteDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c.bw, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n%s", status, http.StatusText(status), text)
	if c.bw.Flush() != nil {
		return
	}
	c.linger()
}

// linger half-closes the connection and reads and drops what the client
// still sends, as nginx's lingering close does: until the client ends its
// side, stays silent for lingerTimeout, or lingerTime has passed, or the
// server shuts down. Closed with bytes unread, the connection would be
// reset, and the reset can reach the client before it has read the
// answer; a client still sending (the rest of a large head, a body) would
// see its writes fail where nginx lets it finish and read the answer.
func (c *serverConn) linger() {
	if CloseWrite(c.rwc) != nil {
		return
	}
	// Answered and half-closed, the connection is as good as idle:
	// Shutdown closes it rather than wait for it.
	c.idle.Store(true)
	defer c.idle.Store(false)
	if c.srv.closed.Load() {
		return
	}
	end := time.Now().Add(lingerTime)
	buf := c.hold[:]
	for c.lingerDeadline(end) {
		if _, err := c.rwc.Read(buf); err != nil {
			return
		}
	}
}

// lingerDeadline sets the read deadline of a lingering read, one that
// drops what the client sends after its answer: lingerTimeout on, but not
// past end, a lingerTime after the first. It reports false, setting none,
// when end has passed.
func (c *serverConn) lingerDeadline(end time.Time) bool {
	d := min(time.Until(end), lingerTimeout)
	if d <= 0 {
		return false
	}
	c.rwc.SetReadDeadline(time.Now().Add(d))
	return true
}

// CloseWrite half-closes c where c can (a *net.TCPConn, or a wrapper of
// one with a CloseWrite of its own), else reports errors.ErrUnsupported.
func CloseWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// lingerTime and lingerTimeout bound linger as nginx's lingering_time
// and lingering_timeout do, with their defaults: in all, and for each
// wait for the client's next bytes.
const (
	lingerTime    = 30 * time.Second
	lingerTimeout = 5 * time.Second
)

// clearDeadline lifts the header deadline before a handler's read; c.mu
// is held.
func (c *serverConn) clearDeadline() {
	if c.deadline {
		c.rwc.SetReadDeadline(time.Time{})
		c.deadline = false
	}
}

// startWatch asks for rc's client to be watched: at once if its body is
// read, else when it is; never once its handler returned (a goroutine of
// the handler's may ask later, even while the next request is served).
func (c *serverConn) startWatch(rc *reqContext) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hijacked {
		return // the handler reads the connection now
	}
	if c.finished || c.cur != rc {
		rc.cancel()
		return
	}
	c.watch = rc
	if c.bodyEOF {
		c.watchSoon()
	}
}

// watchSoon starts the watch, at once or WatchDelay from now; c.mu is
// held.
func (c *serverConn) watchSoon() {
	d := c.srv.WatchDelay
	if d <= 0 {
		c.goWatch()
		return
	}
	if c.delayed {
		return
	}
	c.delayed = true
	if c.delay == nil {
		c.delay = time.AfterFunc(d, c.delayedWatch)
		return
	}
	c.delay.Reset(d)
}

// delayedWatch is the delay's end: the watch starts if the request that
// asked for it is still being served.
func (c *serverConn) delayedWatch() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.delayed && c.watch != nil && !c.finished && !c.hijacked {
		c.goWatch()
	}
}

// sawBodyEOF records that the request's body was read to its end, and
// starts the watch if it was asked for. It runs on the goroutine that read
// the body.
func (c *serverConn) sawBodyEOF() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bodyEOF = true
	if c.watch != nil && c.watching == nil && !c.finished && !c.hijacked {
		c.watchSoon()
	}
}

// goWatch starts reading the connection for the client's end; c.mu is
// held. A read that returns a byte (a pipelined request) ends the watch,
// keeping the byte; the end of the stream or an error cancels the
// request's context; stopWatch's deadline ends it quietly.
func (c *serverConn) goWatch() {
	if c.watching != nil {
		return
	}
	c.clearDeadline()
	done := make(chan struct{})
	c.watching = done
	rc := c.watch
	go func() {
		defer close(done)
		n, err := c.rwc.Read(c.r.byteBuf[:])
		if n == 1 {
			c.r.hasByte = true
			return
		}
		if isTimeout(err) && c.stopping.Load() {
			return
		}
		rc.cancel()
	}()
}

// stopWatch ends the watch, if one runs, once the handler has returned,
// and cancels the request's context, if one was made.
func (c *serverConn) stopWatch() {
	c.mu.Lock()
	c.finished = true
	done, rc := c.watching, c.watch
	c.watching, c.watch, c.cur = nil, nil, nil
	if c.delayed {
		c.delayed = false
		c.delay.Stop()
	}
	c.mu.Unlock()
	c.endWatch(done)
	if rc != nil {
		rc.cancel()
	}
}

// endWatch ends the watching read whose goroutine closes done, if any,
// leaving the connection without a read deadline; a byte it read stays
// in c.r.
func (c *serverConn) endWatch(done chan struct{}) {
	if done == nil {
		return
	}
	c.stopping.Store(true)
	c.rwc.SetReadDeadline(aLongTimeAgo)
	<-done
	c.stopping.Store(false)
	c.rwc.SetReadDeadline(time.Time{})
	c.deadline = false
}

// hijack hands the connection to the handler, as net/http's Hijacker: the
// watch ends without cancelling the request's context (the handler's
// return does that), the header deadline is lifted, the server forgets the
// connection (neither Shutdown nor Close touches it), and the reader it
// returns holds what the client sent beyond the request.
func (c *serverConn) hijack() (net.Conn, *bufio.ReadWriter, error) {
	c.mu.Lock()
	if c.hijacked {
		c.mu.Unlock()
		return nil, nil, http.ErrHijacked
	}
	c.hijacked = true
	done := c.watching
	c.watching = nil
	c.clearDeadline()
	c.mu.Unlock()
	c.endWatch(done)
	c.srv.removeConn(c)
	return c.rwc, bufio.NewReadWriter(c.br, c.bw), nil
}

func (c *serverConn) isHijacked() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hijacked
}

var aLongTimeAgo = time.Unix(1, 0)

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrClosedPipe)
}
