package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"strconv"
	"sync"
	"time"
)

// Client sends GET requests over keep-alive connections that Dial makes
// (GetBy). The caller's goroutine writes the request and reads the answer
// itself: there is no goroutine per connection and no hand-off between
// goroutines, which is where http.Transport spends most of a small
// request's CPU. The bytes on the wire are what http.Transport sends for
// the same GET: the request line, Host and Go's User-Agent. Gzip is not
// asked for (as with DisableCompression) and HTTP/2 is never spoken.
//
// A Client's fields must be set before first use; it is then safe for
// concurrent use. Close it to close its idle connections.
type Client struct {
	// Dial makes a new connection. Required.
	Dial func(ctx context.Context) (net.Conn, error)
	// MaxIdle bounds the idle connections kept for reuse; zero keeps
	// none, so that every request has a connection of its own.
	MaxIdle int
	// HeaderTimeout bounds the wait for the answer's headers once the
	// request is written, and then each wait for more of its body; zero
	// waits forever. An exchange that runs out of it fails with an error
	// whose Timeout method says true (a net.Error).
	HeaderTimeout time.Duration
	// NoRetry says never to send a request twice. False sends a request
	// once more on a new connection when a reused one fails before any
	// byte of the answer (the server closed it while idle), as
	// http.Transport does for a request without a body.
	NoRetry bool
	// SharedContext says that the callers' contexts outlive their requests,
	// as a load generator's one context for a whole run does: a connection
	// then keeps watching its context from one request to the next instead
	// of registering with it for each request. A context that ends while
	// its connection is idle costs the connection. False registers for each
	// request.
	SharedContext bool
	// MaxDials bounds the dials in progress at once. A request that finds
	// no idle connection dials one; past the bound it waits for the first
	// connection to be put back or dialled, and its own dial starts only
	// when one ends with requests still waiting. So a burst of requests
	// that finds every connection busy, as a load generator's after the
	// CPU was taken from it, opens connections only as fast as it still
	// needs them. Zero means no bound: every such request starts its dial
	// at once.
	MaxDials int

	mu       sync.Mutex
	idle     []*conn
	waiting  []*waiter      // requests waiting for a connection, oldest first; some may be served already
	undialed []*waiter      // those of them without a dial of their own, oldest first
	ndials   int            // dials in progress
	dials    sync.WaitGroup // the same, for CloseIdleConnections
}

// conn is a connection and its buffers, and the context whose end aborts
// its I/O.
type conn struct {
	c  net.Conn
	br *bufio.Reader
	bw *bufio.Writer
	// done is the Done channel of the context watched, nil for none; stop
	// stops the watch (context.AfterFunc's stop).
	done <-chan struct{}
	stop func() bool
	used bool // an exchange has ended well on it
	// deadline is the one begin set last.
	deadline time.Time
}

func newConn(nc net.Conn) *conn {
	return &conn{c: nc, br: bufio.NewReaderSize(nc, 4096), bw: bufio.NewWriterSize(nc, 1024)}
}

// watch makes the end of ctx abort c's I/O at once. It reports false when
// c still watched a context that ended, which may have aborted c: c is
// then unusable.
func (c *conn) watch(ctx context.Context) bool {
	done := ctx.Done()
	if done == c.done {
		return true
	}
	if !c.unwatch() {
		return false
	}
	c.done = done
	if done != nil {
		c.stop = context.AfterFunc(ctx, func() { c.c.SetDeadline(time.Unix(1, 0)) })
	}
	return true
}

// unwatch stops c's watch, and reports false when its context ended
// first.
func (c *conn) unwatch() bool {
	if c.stop == nil {
		return true
	}
	ok := c.stop()
	c.done, c.stop = nil, nil
	return ok
}

// close closes c and stops its watch.
func (c *conn) close() {
	if c.stop != nil {
		c.stop()
	}
	c.c.Close()
}

// begin flushes the request written to c.bw, by deadline (zero: none), and
// waits for the answer's first byte, within HeaderTimeout too. A
// connection keeps its deadline from one exchange to the next, so that
// requests each with a deadline set it once.
func (l *Client) begin(c *conn, deadline time.Time) error {
	if !deadline.Equal(c.deadline) {
		c.c.SetDeadline(deadline)
		c.deadline = deadline
	}
	if err := c.bw.Flush(); err != nil {
		return err
	}
	if l.HeaderTimeout > 0 {
		if t := time.Now().Add(l.HeaderTimeout); deadline.IsZero() || t.Before(deadline) {
			c.c.SetReadDeadline(t)
		}
	}
	_, err := c.br.Peek(1)
	return err
}

// end ends an exchange on c under ctx whose answer was read whole: c goes
// back to the pool, watching ctx still with SharedContext, or is closed
// when keep is false. It fails with errAborted when ctx ended meanwhile,
// since its watch may have aborted c.
func (l *Client) end(ctx context.Context, c *conn, keep bool) error {
	if l.HeaderTimeout > 0 {
		c.c.SetReadDeadline(c.deadline)
	}
	if ctx.Err() != nil || !l.SharedContext && !c.unwatch() {
		return errAborted
	}
	if keep {
		c.used = true
		l.put(c)
	} else {
		c.close()
	}
	return nil
}

// errAborted is the error of an exchange whose request context ended.
var errAborted = errors.New("h1: request aborted")

// get returns an idle connection that watches ctx, or nil.
func (l *Client) get(ctx context.Context) *conn {
	for {
		l.mu.Lock()
		n := len(l.idle)
		if n == 0 {
			l.mu.Unlock()
			return nil
		}
		c := l.idle[n-1]
		l.idle[n-1] = nil
		l.idle = l.idle[:n-1]
		l.mu.Unlock()
		if c.watch(ctx) {
			return c
		}
		c.close()
	}
}

func (l *Client) put(c *conn) {
	l.mu.Lock()
	for len(l.waiting) > 0 {
		w := l.waiting[0]
		l.waiting[0] = nil
		l.waiting = l.waiting[1:]
		if !w.served {
			w.served = true
			l.mu.Unlock()
			w.ch <- dialed{c: c}
			return
		}
	}
	if len(l.idle) < l.MaxIdle {
		l.idle = append(l.idle, c)
		c = nil
	}
	l.mu.Unlock()
	if c != nil {
		c.close()
	}
}

// CloseIdleConnections closes the idle connections, once the dials in
// progress have ended (see Client). Called when no request is in progress,
// it leaves no connection open.
func (l *Client) CloseIdleConnections() {
	l.dials.Wait()
	l.mu.Lock()
	idle := l.idle
	l.idle = nil
	l.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
}

// attempt runs ex on a connection from acquire, that watches ctx, by
// deadline (zero: none). When ex fails, the connection is closed, and the
// exchange is tried once more on a new connection if the failed one was
// reused and no byte of the answer came (started false), NoRetry is not
// set and deadline has not passed. ex puts the connection back, or closes
// it, when it succeeds.
func (l *Client) attempt(ctx context.Context, deadline time.Time, ex func(c *conn) (started bool, err error)) error {
	for n := 0; ; n++ {
		c, err := l.acquire(ctx, deadline)
		if err != nil {
			return err
		}
		reused := c.used
		started, err := ex(c)
		if err == nil {
			return nil
		}
		c.close()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if l.NoRetry || !reused || started || n > 0 || !deadline.IsZero() && !time.Now().Before(deadline) {
			return err
		}
	}
}

// errMalformed is wrapped by the error of an answer GetBy cannot parse.
var errMalformed = errors.New("h1: malformed answer")

// GetBy sends a GET for uri (a request target: path and query) with Host
// host, and reads the answer: it returns the status and calls header, when
// not nil, with each header field's name and value (valid only during the
// call), and reads the body to its end without keeping it, as a load
// generator needs: no allocation per request but the context's. A 1xx
// answer is skipped. ctx's end aborts the exchange at once and closes its
// connection. The exchange is bounded by deadline, dial included; zero
// means none. An exchange that runs out of it fails with an error that is
// os.ErrDeadlineExceeded. Unlike a context with a deadline, it costs no
// timer and no registration per request: the deadline is the
// connection's.
func (l *Client) GetBy(ctx context.Context, deadline time.Time, uri, host string, header func(name, value []byte)) (int, error) {
	var status int
	err := l.attempt(ctx, deadline, func(c *conn) (bool, error) {
		st, started, err := l.getOn(ctx, c, deadline, uri, host, header)
		status = st
		return started, err
	})
	return status, err
}

func (l *Client) getOn(ctx context.Context, c *conn, deadline time.Time, uri, host string, header func(name, value []byte)) (int, bool, error) {
	writeGet(c.bw, uri, host)
	if err := l.begin(c, deadline); err != nil {
		return 0, false, err
	}
	status, keep, err := readAnswer(c.br, header)
	if err != nil {
		return 0, true, err
	}
	return status, true, l.end(ctx, c, keep)
}

// writeGet writes a GET for uri with Host host to bw, as GetBy sends it.
func writeGet(bw *bufio.Writer, uri, host string) {
	bw.WriteString("GET ")
	bw.WriteString(uri)
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(host)
	bw.WriteString("\r\nUser-Agent: Go-http-client/1.1\r\n\r\n")
}

// readAnswer reads an answer to a GET from br, skipping 1xx answers, and
// its body to the end without keeping it; header is as GetBy's. Keep says
// the connection may carry another request.
func readAnswer(br *bufio.Reader, header func(name, value []byte)) (status int, keep bool, err error) {
	for {
		a, err := readHead(br, header)
		if err != nil {
			return 0, false, err
		}
		if a.status >= 200 || a.status == 101 {
			if err := discardBody(br, a); err != nil {
				return 0, false, err
			}
			return a.status, !a.close && a.status != 101, nil
		}
	}
}

// head is what readHead takes from an answer's head.
type head struct {
	status  int
	length  int64 // -1: not given
	chunked bool
	close   bool // the connection ends after this answer
}

// readHead reads an answer's status line and header fields.
func readHead(br *bufio.Reader, header func(name, value []byte)) (head, error) {
	h := head{length: -1}
	line, err := readLine(br)
	if err != nil {
		return h, err
	}
	// HTTP/1.x SP 3DIGIT [SP reason]
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return h, fmt.Errorf("%w: status line %q", errMalformed, line)
	}
	// HTTP/1.0 keeps the connection only when asked to.
	v10 := line[7] == '0'
	closing, keep := false, false
	st, err := strconv.Atoi(string(line[9:12]))
	if err != nil || st < 100 || len(line) > 12 && line[12] != ' ' {
		return h, fmt.Errorf("%w: status line %q", errMalformed, line)
	}
	h.status = st
	for {
		line, err := readLine(br)
		if err != nil {
			return h, err
		}
		if len(line) == 0 {
			break
		}
		i := bytes.IndexByte(line, ':')
		if i <= 0 {
			return h, fmt.Errorf("%w: header line %q", errMalformed, line)
		}
		name, value := line[:i], bytes.TrimSpace(line[i+1:])
		switch {
		case asciiEqualFold(name, "Content-Length"):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 {
				return h, fmt.Errorf("%w: Content-Length %q", errMalformed, value)
			}
			h.length = n
		case asciiEqualFold(name, "Transfer-Encoding"):
			h.chunked = asciiEqualFold(value, "chunked")
		case asciiEqualFold(name, "Connection"):
			switch {
			case asciiEqualFold(value, "close"):
				closing = true
			case asciiEqualFold(value, "keep-alive"):
				keep = true
			}
		}
		if header != nil {
			header(name, value)
		}
	}
	if h.chunked {
		h.length = -1
	}
	// Without a length the body runs to the connection's end.
	h.close = closing || v10 && !keep || !h.chunked && h.length < 0 && bodyAllowed(h.status)
	return h, nil
}

// readLine returns the next line without its CRLF (or LF), valid until the
// next read.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, fmt.Errorf("%w: a head line over %d bytes", errMalformed, br.Size())
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// discardBody reads the body of an answer with head a to its end.
func discardBody(br *bufio.Reader, a head) error {
	switch {
	case !bodyAllowed(a.status):
		return nil
	case a.chunked:
		_, err := io.Copy(io.Discard, httputil.NewChunkedReader(br))
		if err != nil {
			return err
		}
		// Trailer fields, then the empty line.
		for {
			line, err := readLine(br)
			if err != nil {
				return err
			}
			if len(line) == 0 {
				return nil
			}
		}
	case a.length >= 0:
		_, err := br.Discard(int(a.length))
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	default:
		// No length: the body runs to the connection's end.
		_, err := io.Copy(io.Discard, br)
		return err
	}
}

// bodyAllowed reports whether an answer of status st may have a body.
func bodyAllowed(st int) bool { return st >= 200 && st != 204 && st != 304 }

// asciiEqualFold reports whether b is s, ignoring ASCII case.
func asciiEqualFold[T []byte | string](b T, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
