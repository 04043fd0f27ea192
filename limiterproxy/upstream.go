package limiterproxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// oneShot is the upstream transport of a proxy without KeepAlive: every
// request goes on a connection of its own, which closes when the response
// body does, as nginx talks to an upstream by default. It is built on the
// standard library's request writer and response reader, without
// http.Transport, whose pool, per-connection reader and writer goroutines
// and channels cost a connection used once about as much as the proxy's own
// work. It sends a request once, never again.
//
// The zero value dials with no timeout and waits for response headers
// forever. It is safe for concurrent use.
type oneShot struct {
	dialer *net.Dialer
	// headerTimeout bounds the wait for the response headers after the
	// request was written (nginx's proxy_read_timeout); zero means none.
	headerTimeout time.Duration
}

// maxUpstreamHeader bounds the bytes of an upstream's response headers,
// informational answers included; over it the proxy answers 502, as nginx
// does for "upstream sent too big header" (at a few KiB by default).
const maxUpstreamHeader = 64 << 10

var errUpstreamHeader = errors.New("upstream sent too big a header")

var (
	upstreamReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}
	upstreamWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}
)

// RoundTrip sends req on a new connection to req.URL.Host and returns the
// response, whose body owns the connection. The request must be an http
// one; req.Close should be set so that the upstream hears
// "Connection: close". A request body is written while the response is
// read, so that an upstream that answers before reading it all (a 413,
// say) is heard; each of its writes may take the header timeout.
func (t *oneShot) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	dialer := t.dialer
	if dialer == nil {
		dialer = &net.Dialer{}
	}
	conn, err := dialer.DialContext(ctx, "tcp", hostPort(req))
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	// A client that goes away takes the upstream connection with it, as
	// nginx closes it (and a gunicorn worker may go on regardless).
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	hc := &headerConn{Conn: conn}
	hc.left.Store(maxUpstreamHeader)

	// The header timeout runs from when the request is written; it is
	// armed by whichever comes last of the write's end and nothing, and
	// disarmed once the headers are in.
	var (
		mu         sync.Mutex
		headersIn  bool
		writeErr   error
		writerDone chan struct{}
	)
	arm := func() {
		if t.headerTimeout > 0 {
			conn.SetReadDeadline(time.Now().Add(t.headerTimeout)) //nolint:errcheck // a closed conn fails the read
		}
	}
	write := func(w io.Writer) error {
		bw := upstreamWriters.Get().(*bufio.Writer)
		bw.Reset(w)
		err := req.Write(bw) // closes req.Body
		if err == nil {
			err = bw.Flush()
		}
		bw.Reset(nil)
		upstreamWriters.Put(bw)
		return err
	}
	if req.Body == nil || req.Body == http.NoBody {
		if writeErr = write(conn); writeErr != nil {
			return fail(ctx, conn, stop, writeErr)
		}
		arm()
	} else {
		writerDone = make(chan struct{})
		go func() {
			defer close(writerDone)
			err := write(sendConn{conn, t.headerTimeout})
			mu.Lock()
			defer mu.Unlock()
			writeErr = err
			if err == nil && !headersIn {
				arm()
			}
		}()
	}

	br := upstreamReaders.Get().(*bufio.Reader)
	br.Reset(hc)
	resp, err := readResponse(br, req)
	mu.Lock()
	headersIn = true
	mu.Unlock()
	if err != nil {
		br.Reset(nil)
		upstreamReaders.Put(br)
		if writerDone != nil {
			conn.Close()
			<-writerDone
			if writeErr != nil && !errors.Is(err, errUpstreamHeader) && !IsTimeout(err) {
				// The upstream hung up mid-request and said nothing: the
				// write's error says why.
				err = writeErr
			}
		}
		return fail(ctx, conn, stop, err)
	}
	hc.left.Store(-1) // the body is not bounded here
	if t.headerTimeout > 0 {
		conn.SetReadDeadline(time.Time{}) //nolint:errcheck
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// httputil.ReverseProxy splices an upgraded connection when the
		// body is writable too.
		resp.Body = &upgraded{br: br, conn: conn, stop: stop}
		return resp, nil
	}
	resp.Body = &oneShotBody{body: resp.Body, br: br, conn: conn, stop: stop}
	return resp, nil
}

// readResponse reads the response to req from br, skipping informational
// answers (100 Continue, 103 Early Hints), which nginx does not pass on
// either.
func readResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
	}
}

// fail ends a round trip that got no response: the connection closes, and
// a client that went away gets its context's error, which the proxy
// answers with nothing.
func fail(ctx context.Context, conn net.Conn, stop func() bool, err error) (*http.Response, error) {
	stop()
	conn.Close()
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return nil, err
}

// sendConn writes a request body to the upstream, each write bounded by
// timeout (zero: none), as nginx's proxy_send_timeout bounds the wait
// between two writes.
type sendConn struct {
	net.Conn
	timeout time.Duration
}

func (c sendConn) Write(p []byte) (int, error) {
	if c.timeout > 0 {
		c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)) //nolint:errcheck // a closed conn fails the write
	}
	return c.Conn.Write(p)
}

// headerConn is the upstream connection as the response reader sees it:
// reads fail with errUpstreamHeader once left bytes were read, until left
// is set below zero (no bound) when the headers are in.
type headerConn struct {
	net.Conn
	left atomic.Int64
}

func (c *headerConn) Read(p []byte) (int, error) {
	left := c.left.Load()
	if left < 0 {
		return c.Conn.Read(p)
	}
	if left == 0 {
		return 0, errUpstreamHeader
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.Conn.Read(p)
	c.left.Add(-int64(n))
	return n, err
}

// hostPort returns the address to dial for req: its URL's host, with port
// 80 when it names none.
func hostPort(req *http.Request) string {
	host := req.URL.Host
	if req.URL.Port() == "" {
		return net.JoinHostPort(req.URL.Hostname(), "80")
	}
	return host
}

// oneShotBody is a response body that closes its connection when closed,
// and gives the reader back.
type oneShotBody struct {
	body io.ReadCloser
	br   *bufio.Reader
	conn net.Conn
	stop func() bool
	once sync.Once
}

func (b *oneShotBody) Read(p []byte) (int, error) { return b.body.Read(p) }

func (b *oneShotBody) Close() error {
	b.once.Do(func() {
		b.stop()
		// The connection first: a body not read to its end then fails at
		// once rather than being drained, and a request body still being
		// written stops.
		b.conn.Close()
		b.body.Close()
		b.br.Reset(nil)
		upstreamReaders.Put(b.br)
	})
	return nil
}

// upgraded is the connection of a 101 Switching Protocols answer, read
// through what the response reader had buffered.
type upgraded struct {
	br   *bufio.Reader
	conn net.Conn
	stop func() bool
}

func (u *upgraded) Read(p []byte) (int, error)  { return u.br.Read(p) }
func (u *upgraded) Write(p []byte) (int, error) { return u.conn.Write(p) }
func (u *upgraded) Close() error {
	u.stop()
	return u.conn.Close()
}
