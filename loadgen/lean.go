package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// leanClient is an HTTP/1.1 client for GET requests over keep-alive
// connections that a dial function makes, without http.Transport's two
// goroutines per connection and their hand-offs: the caller's goroutine
// writes the request and reads the answer itself. The bytes on the wire are
// what http.Transport sends for the same request (request line, Host,
// User-Agent, Accept-Encoding: gzip is left out as DisableCompression
// does). It is an http.RoundTripper for the requests the driver makes:
// method GET, no body, the URL's path and query, and req.Host. It is safe
// for concurrent use; idle connections are kept up to maxIdle.
type leanClient struct {
	dial    func(ctx context.Context) (net.Conn, error)
	maxIdle int

	mu   sync.Mutex
	idle []*leanConn
}

type leanConn struct {
	c  net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

var _ http.RoundTripper = (*leanClient)(nil)

func newLeanClient(from netip.Addr, dial func(ctx context.Context, from netip.Addr) (net.Conn, error), maxIdle int) *leanClient {
	return &leanClient{dial: func(ctx context.Context) (net.Conn, error) { return dial(ctx, from) }, maxIdle: maxIdle}
}

func (l *leanClient) get() *leanConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.idle); n > 0 {
		c := l.idle[n-1]
		l.idle = l.idle[:n-1]
		return c
	}
	return nil
}

func (l *leanClient) put(c *leanConn) {
	l.mu.Lock()
	if len(l.idle) < l.maxIdle {
		l.idle = append(l.idle, c)
		c = nil
	}
	l.mu.Unlock()
	if c != nil {
		c.c.Close()
	}
}

// CloseIdleConnections closes the idle connections.
func (l *leanClient) CloseIdleConnections() {
	l.mu.Lock()
	idle := l.idle
	l.idle = nil
	l.mu.Unlock()
	for _, c := range idle {
		c.c.Close()
	}
}

// errAborted is the error of a request whose context ended.
var errAborted = errors.New("loadgen: request aborted")

// RoundTrip sends req and returns the answer with its body read into
// memory, so that the connection goes back to the pool at once. A request
// on a reused connection that fails before any byte of the answer came
// (the server closed it while idle) is sent once more on a new one, as
// http.Transport does for a GET.
func (l *leanClient) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	for attempt := 0; ; attempt++ {
		c := l.get()
		reused := c != nil
		if c == nil {
			nc, err := l.dial(ctx)
			if err != nil {
				return nil, err
			}
			c = &leanConn{c: nc, br: bufio.NewReaderSize(nc, 4096), bw: bufio.NewWriterSize(nc, 1024)}
		}
		resp, started, err := l.exchange(ctx, c, req)
		if err == nil {
			return resp, nil
		}
		c.c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !reused || started || attempt > 0 {
			return nil, err
		}
	}
}

// exchange writes req on c and reads the answer. Started says bytes of the
// answer came before the error.
func (l *leanClient) exchange(ctx context.Context, c *leanConn, req *http.Request) (*http.Response, bool, error) {
	// The context's end aborts the connection's I/O at once.
	stop := context.AfterFunc(ctx, func() { c.c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	bw := c.bw
	bw.WriteString("GET ")
	bw.WriteString(req.URL.RequestURI())
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(req.Host)
	bw.WriteString("\r\nUser-Agent: Go-http-client/1.1\r\n\r\n")
	if err := bw.Flush(); err != nil {
		return nil, false, err
	}
	if _, err := c.br.Peek(1); err != nil {
		return nil, false, err
	}
	resp, err := http.ReadResponse(c.br, req)
	if err != nil {
		return nil, true, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, true, err
	}
	if !stop() {
		// The context ended meanwhile: the deadline may be set.
		return nil, true, errAborted
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if resp.Close {
		c.c.Close()
	} else {
		l.put(c)
	}
	return resp, true, nil
}
