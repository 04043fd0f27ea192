package limiterproxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
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

var (
	upstreamReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}
	upstreamWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}
)

// RoundTrip sends req on a new connection to req.URL.Host and returns the
// response, whose body owns the connection. The request must be an http
// one; req.Close should be set so that the upstream hears
// "Connection: close".
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
	fail := func(err error) (*http.Response, error) {
		stop()
		conn.Close()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, err
	}

	bw := upstreamWriters.Get().(*bufio.Writer)
	bw.Reset(conn)
	err = req.Write(bw) // closes req.Body
	if err == nil {
		err = bw.Flush()
	}
	bw.Reset(nil)
	upstreamWriters.Put(bw)
	if err != nil {
		return fail(err)
	}

	if t.headerTimeout > 0 {
		conn.SetReadDeadline(time.Now().Add(t.headerTimeout)) //nolint:errcheck // a closed conn fails the read below
	}
	br := upstreamReaders.Get().(*bufio.Reader)
	br.Reset(conn)
	var resp *http.Response
	for {
		resp, err = http.ReadResponse(br, req)
		if err != nil {
			br.Reset(nil)
			upstreamReaders.Put(br)
			return fail(err)
		}
		// Informational answers (100 Continue, 103 Early Hints) precede
		// the response; nginx does not pass them on either.
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
	}
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
