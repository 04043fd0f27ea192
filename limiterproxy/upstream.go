package limiterproxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// upstreamTransport is the proxy's upstream transport. Without a pool
// every request goes on a connection of its own, which closes when the
// response body does, as nginx talks to an upstream by default; with one,
// a connection whose exchange ended cleanly waits in the pool for the next
// request, as nginx's `upstream { keepalive N; }` keeps it. It is built on
// the standard library's request writer and response reader, without
// http.Transport, whose per-connection reader and writer goroutines and
// channels cost about as much as the proxy's own work. A request is sent
// again only as nginx's proxy_next_upstream (error timeout) sends it: when
// a reused connection fails before the response, for a request without a
// body that is not a POST, LOCK or PATCH.
//
// The zero value dials with no timeout, waits for the upstream forever and
// keeps no connection. It is safe for concurrent use.
type upstreamTransport struct {
	dialer *net.Dialer
	// dial, when set, opens connections instead of dialer.
	dial func(ctx context.Context, network, address string) (net.Conn, error)
	// readTimeout is nginx's proxy_read_timeout: it bounds the wait for
	// the response headers after the request was written, then each wait
	// for the next bytes of the body or of an upgraded connection; zero
	// means none.
	readTimeout time.Duration
	// sendTimeout is nginx's proxy_send_timeout: it bounds each write of
	// the request (and of an upgraded connection) to the upstream; zero
	// means none.
	sendTimeout time.Duration
	// host and addr, when addr is valid, say that a request for host
	// (host:port, as in a URL) is dialled at addr without a lookup: the
	// upstream named by an IP address.
	host string
	addr netip.AddrPort
	// pool keeps idle connections; nil keeps none.
	pool *idlePool
	// noRetry answers a reused connection's failure as a fresh one's,
	// never sending the request again (nginx's proxy_next_upstream off).
	noRetry bool
}

// newUpstreamTransport returns the transport to upstream, which it dials
// with dialer.
func newUpstreamTransport(upstream *url.URL, dialer *net.Dialer, readTimeout, sendTimeout time.Duration) *upstreamTransport {
	t := &upstreamTransport{dialer: dialer, readTimeout: readTimeout, sendTimeout: sendTimeout}
	if ap, err := netip.ParseAddrPort(hostPort(upstream)); err == nil {
		t.host, t.addr = upstream.Host, ap
	}
	return t
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

// exchange is one round trip's state, allocated once: the connection as
// the response reader sees it, the arming of the header timeout, the
// request as written (out, whose body is rb) and the response body.
type exchange struct {
	t    *upstreamTransport
	req  *http.Request
	out  http.Request
	head []byte // the request's head, written instead of out when set
	rb   clientBody
	sc   sendConn
	uc   *upConn
	conn net.Conn
	stop func() bool // unhooks the connection from the request's context
	br   *bufio.Reader
	resp *http.Response
	// plain and known are the response and its body when the upstream's
	// head is plain (readHead).
	plain http.Response
	known knownBody

	hc   headerConn
	body upstreamBody

	mu         sync.Mutex
	headersIn  bool
	writeErr   error
	writerDone chan struct{}
}

// RoundTrip sends req to req.URL.Host, on an idle connection of the pool
// if there is one, else on a new one, and returns the response, whose body
// owns the connection. The request must be an http one; without a pool
// req.Close should be set so that the upstream hears "Connection: close".
// A request body is written while the response is read, so that an
// upstream that answers before reading it all (a 413, say) is heard; each
// of its writes may take the send timeout. A request body the client
// fails to send (its client_body_timeout, a malformed chunk) ends the
// exchange at once with the body's error.
func (t *upstreamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.roundTrip(req, nil)
}

// roundTrip is RoundTrip, writing head as the request's head when it is
// not nil (Proxy's lean path) rather than writing req; req then has no
// body.
func (t *upstreamTransport) roundTrip(req *http.Request, head []byte) (*http.Response, error) {
	for {
		uc, err := t.conn(req)
		if err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
		resp, err := t.exchange(req, uc, head)
		if err == nil || !t.retry(req, uc, err) {
			return resp, err
		}
	}
}

// CloseIdleConnections closes the connections idle in the pool, as
// http.Transport's method of that name does.
func (t *upstreamTransport) CloseIdleConnections() { t.pool.closeAll() }

// retry reports whether a request whose exchange on uc failed with err
// goes again, as nginx's default proxy_next_upstream (error timeout) sends
// it again on the next connection: the connection was a reused one (nginx
// then does not count the try) and failed (closed, reset) rather than timed
// out or sent a bad header, the client is still there, and the request is
// not a POST, LOCK or PATCH, which nginx does not send twice. nginx
// buffers request bodies and sends them again; the proxy streams them,
// and sends again only a request without one.
func (t *upstreamTransport) retry(req *http.Request, uc *upConn, err error) bool {
	if !uc.reused || t.noRetry || req.Context().Err() != nil {
		return false
	}
	if req.Body != nil && req.Body != http.NoBody {
		return false
	}
	switch req.Method {
	case http.MethodPost, http.MethodPatch, "LOCK":
		return false
	}
	if IsTimeout(err) || errors.Is(err, errUpstreamHeader) {
		return false
	}
	var errno syscall.Errno
	var op *net.OpError
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &errno) || errors.As(err, &op)
}

// conn returns an idle connection from the pool, or a new one.
func (t *upstreamTransport) conn(req *http.Request) (*upConn, error) {
	if uc := t.pool.get(); uc != nil {
		uc.reused = true
		return uc, nil
	}
	c, err := t.dialConn(req.Context(), req)
	if err != nil {
		return nil, err
	}
	uc := &upConn{Conn: c}
	if t.pool != nil {
		uc.start = time.Now()
		if sc, ok := c.(syscall.Conn); ok {
			uc.raw, _ = sc.SyscallConn()
		}
	}
	return uc, nil
}

// exchange sends req on uc and reads the response headers.
func (t *upstreamTransport) exchange(req *http.Request, uc *upConn, head []byte) (*http.Response, error) {
	ctx := req.Context()
	conn := uc.Conn
	uc.requests++
	x := &exchange{t: t, req: req, uc: uc, conn: conn, head: head}
	if head == nil {
		x.out = *req
	}
	if req.Body != nil && req.Body != http.NoBody {
		x.rb.body = req.Body
		x.out.Body = &x.rb
	}
	// A client that goes away takes the upstream connection with it, as
	// nginx closes it (and a gunicorn worker may go on regardless).
	x.stop = afterFunc(ctx, func() { conn.Close() })
	hasBody := x.rb.body != nil
	if uc.reused {
		// The last exchange's deadlines are past by now: a request with
		// a body reads before the header timeout is armed, and one
		// without writes through no sendConn.
		if hasBody && t.readTimeout > 0 {
			conn.SetReadDeadline(time.Time{}) //nolint:errcheck // a closed conn fails the read
		}
		if !hasBody && uc.writeDeadline {
			conn.SetWriteDeadline(time.Time{}) //nolint:errcheck // a closed conn fails the write
			uc.writeDeadline = false
		}
	}
	x.hc.Conn = conn
	x.hc.left.Store(maxUpstreamHeader)

	// The header timeout runs from when the request is written; it is
	// armed by whichever comes last of the write's end and nothing, and
	// disarmed once the headers are in.
	if !hasBody {
		if x.writeErr = x.write(conn); x.writeErr != nil {
			return x.fail(x.writeErr)
		}
		x.arm()
	} else {
		x.writerDone = make(chan struct{})
		go x.writeBody()
	}

	x.br = upstreamReaders.Get().(*bufio.Reader)
	x.br.Reset(&x.hc)
	resp, err := readResponse(x.br, req, &x.plain, &x.known)
	x.mu.Lock()
	x.headersIn = true
	x.mu.Unlock()
	if err != nil {
		if x.hc.timedOut.Load() {
			err = errHeaderTimeout
		}
		x.br.Reset(nil)
		upstreamReaders.Put(x.br)
		if x.writerDone != nil {
			conn.Close()
			<-x.writerDone
			if x.rb.err != nil {
				// The client's body failed; the upstream's answer, if
				// any, is moot.
				err = x.rb.err
			} else if x.writeErr != nil && !errors.Is(err, errUpstreamHeader) && !IsTimeout(err) {
				// The upstream hung up mid-request and said nothing: the
				// write's error says why.
				err = x.writeErr
			}
		}
		return x.fail(err)
	}
	x.hc.left.Store(-1) // the body is not bounded here
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// httputil.ReverseProxy splices an upgraded connection when the
		// body is writable too.
		resp.Body = &upgraded{br: x.br, conn: conn, stop: x.stop, readTimeout: t.readTimeout, sendTimeout: t.sendTimeout}
		return resp, nil
	}
	x.resp = resp
	x.body = upstreamBody{body: resp.Body, x: x}
	resp.Body = &x.body
	return resp, nil
}

// afterFunc is context.AfterFunc, but calls ctx's own AfterFunc method
// when it has one, where context.AfterFunc would ask for ctx's Done
// channel first: the lean server's request context then makes no
// cancellable context for it.
func afterFunc(ctx context.Context, f func()) (stop func() bool) {
	if a, ok := ctx.(interface{ AfterFunc(func()) func() bool }); ok {
		return a.AfterFunc(f)
	}
	return context.AfterFunc(ctx, f)
}

// dialConn connects to req's upstream: with t.dial when set, else at
// t.addr without a lookup when that is the upstream's address.
func (t *upstreamTransport) dialConn(ctx context.Context, req *http.Request) (net.Conn, error) {
	if t.dial != nil {
		return t.dial(ctx, "tcp", hostPort(req.URL))
	}
	dialer := t.dialer
	if dialer == nil {
		dialer = &net.Dialer{}
	}
	if t.addr.IsValid() && req.URL.Host == t.host {
		c, err := dialer.DialTCP(ctx, "tcp", netip.AddrPort{}, t.addr)
		if err != nil {
			return nil, err // not a nil *TCPConn in an interface
		}
		return c, nil
	}
	return dialer.DialContext(ctx, "tcp", hostPort(req.URL))
}

// arm starts the header timeout. It runs once, not per read: nginx arms
// proxy_read_timeout when the request is sent and lets header bytes
// trickling in not re-arm it.
func (x *exchange) arm() {
	if x.t.readTimeout > 0 {
		x.conn.SetReadDeadline(time.Now().Add(x.t.readTimeout)) //nolint:errcheck // a closed conn fails the read
	}
}

// write writes the request to w through a pooled buffer; it closes the
// request's body.
func (x *exchange) write(w io.Writer) error {
	if x.head != nil {
		_, err := w.Write(x.head)
		return err
	}
	bw := upstreamWriters.Get().(*bufio.Writer)
	bw.Reset(w)
	err := x.out.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	bw.Reset(nil)
	upstreamWriters.Put(bw)
	return err
}

// writeBody writes a request with a body while RoundTrip reads the
// answer, and arms the header timeout when done if the headers are not in
// yet.
func (x *exchange) writeBody() {
	defer close(x.writerDone)
	x.sc = sendConn{Conn: x.conn, timeout: x.t.sendTimeout}
	x.uc.writeDeadline = x.t.sendTimeout > 0
	err := x.write(&x.sc)
	if x.sc.err != nil {
		// The request writer wraps a write's error in a type of its own
		// that hides what it was.
		err = x.sc.err
	}
	if x.rb.err != nil || IsTimeout(x.sc.err) {
		// Unblock the response reader: the upstream waits for the rest
		// of a body that will never come, or takes none of it (nginx's
		// proxy_send_timeout: 504).
		x.conn.Close()
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.writeErr = err
	if err == nil && !x.headersIn {
		x.arm()
	}
}

// fail ends a round trip that got no response: the connection closes, and
// a client that went away gets its context's error, which the proxy
// answers with nothing.
func (x *exchange) fail(err error) (*http.Response, error) {
	x.stop()
	x.conn.Close()
	if ctxErr := x.req.Context().Err(); ctxErr != nil && x.rb.err == nil {
		// A client body that failed cancels the context too; its error
		// says more.
		err = ctxErr
	}
	return nil, err
}

// keep reports whether the connection of x, whose response body was read
// to its end, may serve another request, as nginx's keepalive module
// decides when the upstream is freed: the response was HTTP/1.1 without
// "Connection: close", its body delimited (not by the connection's close)
// and followed by nothing, the request body all sent, no read timed out,
// and the connection has served fewer than keepalive_requests requests
// within keepalive_time.
func (x *exchange) keep() bool {
	p := x.t.pool
	if p == nil || x.resp.Close || !x.resp.ProtoAtLeast(1, 1) || x.br.Buffered() > 0 || x.hc.timedOut.Load() {
		return false
	}
	if x.writerDone != nil && !x.bodySent() {
		return false
	}
	return x.uc.requests < p.maxRequests && time.Since(x.uc.start) < p.maxAge
}

// writerGrace bounds how long the end of an exchange waits for the writer
// of a request body that was read to its end to say that it handed the
// last bytes to the kernel.
const writerGrace = 10 * time.Millisecond

// bodySent reports whether the request body was all sent, as nginx's
// request_body_sent says. The answer may be in before the writer says it
// is done: once it has read the client's body to its end only its last
// write is left, which returns at once unless the upstream answered
// without taking the body (an early 413); then the connection closes.
func (x *exchange) bodySent() bool {
	select {
	case <-x.writerDone:
	default:
		if !x.rb.eof.Load() {
			return false
		}
		t := time.NewTimer(writerGrace)
		defer t.Stop()
		select {
		case <-x.writerDone:
		case <-t.C:
			return false
		}
	}
	return x.writeErr == nil
}

// readResponse reads the response to req from br, skipping informational
// answers (100 Continue, 103 Early Hints), which nginx does not pass on
// either: a plain head into resp, with body as its body (see readHead),
// any other with http.ReadResponse.
func readResponse(br *bufio.Reader, req *http.Request, resp *http.Response, body *knownBody) (*http.Response, error) {
	for {
		if ok, err := readHead(br, req, resp, body); err != nil {
			return nil, err
		} else if ok {
			return resp, nil
		}
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
	}
}

// sendConn writes a request body to the upstream, each write bounded by
// timeout (zero: none), as nginx's proxy_send_timeout bounds the wait
// between two writes.
type sendConn struct {
	net.Conn
	timeout time.Duration
	err     error // the first write's error
}

func (c *sendConn) Write(p []byte) (int, error) {
	if c.timeout > 0 {
		c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)) //nolint:errcheck // a closed conn fails the write
	}
	n, err := c.Conn.Write(p)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// headerConn is the upstream connection as the response reader sees it:
// reads fail with errUpstreamHeader once left bytes were read, until left
// is set below zero (no bound) when the headers are in.
type headerConn struct {
	net.Conn
	left atomic.Int64
	// timedOut is set by a read that hit the header timeout: the response
	// reader may report only the malformed fragment read before it.
	timedOut atomic.Bool
}

// errHeaderTimeout is the header timeout running out while the headers
// trickled in.
var errHeaderTimeout error = headerTimeoutError{}

type headerTimeoutError struct{}

func (headerTimeoutError) Error() string {
	return "upstream did not send its response headers within the read timeout"
}
func (headerTimeoutError) Timeout() bool   { return true }
func (headerTimeoutError) Temporary() bool { return true }

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
	if err != nil && IsTimeout(err) {
		c.timedOut.Store(true)
	}
	return n, err
}

// hostPort returns the address to dial for u: its host, with port 80 when
// it names none.
func hostPort(u *url.URL) string {
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "80")
	}
	return u.Host
}

// upstreamBody is a response body that, when closed, gives its connection
// back to the pool if the exchange ended cleanly (exchange.keep), else
// closes it; either way it gives the reader back.
type upstreamBody struct {
	body io.ReadCloser
	x    *exchange
	eof  bool // the body was read to its end
	once sync.Once
}

// Read reads the body, each wait for more bytes from the upstream bounded
// by the read timeout, as nginx's proxy_read_timeout bounds the time
// between two successive reads.
func (b *upstreamBody) Read(p []byte) (int, error) {
	// Bytes the response reader holds already are read without waiting:
	// the deadline is for a read that waits on the connection (a small
	// body came in with the headers).
	if t := b.x.t.readTimeout; t > 0 && b.x.br.Buffered() == 0 {
		b.x.conn.SetReadDeadline(time.Now().Add(t)) //nolint:errcheck // a closed conn fails the read
	}
	n, err := b.body.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *upstreamBody) Close() error {
	b.once.Do(func() {
		x := b.x
		// A body the response reader knows to be empty is at its end
		// unread.
		done := b.eof || b.body == http.NoBody
		// Unhooked from the client, the connection is the exchange's
		// again, unless the client's going already closed it.
		if x.stop() && done && x.keep() {
			b.body.Close()
			x.br.Reset(nil)
			upstreamReaders.Put(x.br)
			x.t.pool.put(x.uc)
			return
		}
		// The connection first: a body not read to its end then fails at
		// once rather than being drained, and a request body still being
		// written stops.
		x.conn.Close()
		b.body.Close()
		x.br.Reset(nil)
		upstreamReaders.Put(x.br)
	})
	return nil
}

// upgraded is the connection of a 101 Switching Protocols answer, read
// through what the response reader had buffered. As nginx does for an
// upgraded connection, traffic either way re-arms readTimeout for the
// upstream's next bytes, so a connection idle that long closes; each write
// to the upstream is bounded by sendTimeout. Zero timeouts mean none.
type upgraded struct {
	br                       *bufio.Reader
	conn                     net.Conn
	stop                     func() bool
	readTimeout, sendTimeout time.Duration
}

func (u *upgraded) Read(p []byte) (int, error) {
	u.rearm()
	return u.br.Read(p)
}

func (u *upgraded) Write(p []byte) (int, error) {
	u.rearm()
	if u.sendTimeout > 0 {
		u.conn.SetWriteDeadline(time.Now().Add(u.sendTimeout)) //nolint:errcheck // a closed conn fails the write
	}
	return u.conn.Write(p)
}

func (u *upgraded) rearm() {
	if u.readTimeout > 0 {
		u.conn.SetReadDeadline(time.Now().Add(u.readTimeout)) //nolint:errcheck // a closed conn fails the read
	}
}
func (u *upgraded) Close() error {
	u.stop()
	return u.conn.Close()
}

// clientBody is the client's request body as the exchange writes it
// upstream: it keeps the body's first error, so that the exchange can tell
// a client that failed to send its body from an upstream that failed to
// take it.
type clientBody struct {
	body io.ReadCloser
	err  error
	eof  atomic.Bool // the body was read to its end
}

func (b *clientBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if err == io.EOF {
		b.eof.Store(true)
	} else if err != nil && b.err == nil {
		b.err = err
	}
	return n, err
}

func (b *clientBody) Close() error { return b.body.Close() }
