package limiterproxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// guard is the handler NewServer puts in front of the one it serves. It
// does what nginx does before any module sees a request:
//
//   - it refuses what nginx refuses, with nginx's status (see refusal);
//   - it bounds each wait for the next bytes of the client's body by
//     bodyTimeout, nginx's client_body_timeout (zero: none);
//   - it passes on the headers of a response cut off mid-body (an
//     upstream read timeout), as nginx sends them before it closes.
//
// It is safe for concurrent use.
type guard struct {
	next        http.Handler
	bodyTimeout time.Duration
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if status, why := refusal(r); status != 0 {
		// nginx closes the connection after a request it could not parse.
		w.Header().Set("Connection", "close")
		http.Error(w, http.StatusText(status)+": "+why, status)
		return
	}
	gw := &guardWriter{ResponseWriter: w}
	if g.bodyTimeout > 0 && r.Body != nil && r.Body != http.NoBody {
		if conn, ok := w.(readDeadliner); ok {
			gw.body = timedBody{body: r.Body, conn: conn, timeout: g.bodyTimeout}
			r.Body = &gw.body
		}
	}
	defer gw.cutOff()
	g.next.ServeHTTP(gw, r)
	gw.returned = true
	if gw.body.timedOut.Load() {
		// nginx reads a body whole before it proxies; one that timed out
		// is answered nothing, whatever came back.
		panic(http.ErrAbortHandler)
	}
}

// refusal returns the status nginx 1.22 answers r with before any module
// sees it, and why; 0 if nginx takes it. Measured on nginx 1.22: CONNECT
// and a request-target of "*" (OPTIONS *, PRI * of an HTTP/2 preface sent
// to an HTTP/1 port) are 400, TRACE is 405, and so are an empty Host
// header, a Content-Length with a Transfer-Encoding, two Content-Lengths
// (even equal), a Transfer-Encoding on HTTP/1.0, and a header folded onto
// a second line (obs-fold). Go's parser accepts or normalises away the
// last five; what it hides is read off the connection's bytes by the
// listener Listen returns (see reqScan), and without that listener only
// an empty Host on HTTP/1.1 is refused.
func refusal(r *http.Request) (int, string) {
	switch {
	case r.Method == http.MethodConnect:
		return http.StatusBadRequest, "CONNECT is not served"
	case r.RequestURI == "*":
		return http.StatusBadRequest, "request target * is not served"
	case r.Method == http.MethodTrace:
		return http.StatusMethodNotAllowed, "TRACE is not allowed"
	}
	lc, _ := r.Context().Value(connKey{}).(*limitConn)
	if lc == nil {
		if r.Host == "" && r.ProtoAtLeast(1, 1) {
			// Go refuses HTTP/1.1 without Host itself: this one had an
			// empty one.
			return http.StatusBadRequest, "empty Host header"
		}
		return 0, ""
	}
	if r.Header.Get("Upgrade") != "" {
		// What follows on the connection may be another protocol.
		lc.scan.stop()
	}
	b, ok := lc.scan.next()
	switch {
	case !ok:
	case b.obsFold:
		return http.StatusBadRequest, "header line folded (obs-fold)"
	case b.contentLengths > 1:
		return http.StatusBadRequest, "duplicate Content-Length"
	case b.contentLengths > 0 && b.transferEncodings > 0:
		return http.StatusBadRequest, "both Content-Length and Transfer-Encoding"
	case b.transferEncodings > 0 && b.http10:
		return http.StatusBadRequest, "Transfer-Encoding on HTTP/1.0"
	case b.emptyHost:
		return http.StatusBadRequest, "empty Host header"
	}
	return 0, ""
}

// connKey is the context key under which NewServer's ConnContext puts the
// *limitConn a request came on.
type connKey struct{}

// connContext is NewServer's http.Server.ConnContext: the connection for
// refusal, and its raw connection for clientGone (gone.go).
func connContext(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := c.(*limitConn); ok {
		ctx = context.WithValue(ctx, connKey{}, lc)
	}
	return withClientConn(ctx, c)
}

// guardWriter is the response writer behind a guard: it notes whether
// headers were written, so that a response cut off (the handler panics
// with http.ErrAbortHandler, as httputil.ReverseProxy does when the body
// cannot be read) sends them before the connection closes.
type guardWriter struct {
	http.ResponseWriter
	wroteHeader, returned bool
	body                  timedBody
}

func (w *guardWriter) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.wroteHeader = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *guardWriter) Write(p []byte) (int, error) {
	w.wroteHeader = true
	return w.ResponseWriter.Write(p)
}

// Flush sends what is buffered, as http.Flusher.
func (w *guardWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() } //nolint:errcheck // the client may be gone

// Unwrap lets http.ResponseController reach the server's writer (to
// hijack an upgraded connection, say).
func (w *guardWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// cutOff runs as the handler ends: on a panic, it sends the headers
// already written before the panic goes on to close the connection.
func (w *guardWriter) cutOff() {
	if !w.returned && w.wroteHeader {
		w.Flush()
	}
}

// readDeadliner is the server's response writer's hold on the connection's
// read deadline.
type readDeadliner interface{ SetReadDeadline(time.Time) error }

// timedBody is a client's request body whose every read must bring bytes
// within timeout, as nginx's client_body_timeout bounds the time between
// two successive reads. Its errors other than io.EOF are
// *clientBodyError.
type timedBody struct {
	body     io.ReadCloser
	conn     readDeadliner
	timeout  time.Duration
	timedOut atomic.Bool // read by the handler, set by whoever reads the body
}

func (b *timedBody) Read(p []byte) (int, error) {
	b.conn.SetReadDeadline(time.Now().Add(b.timeout)) //nolint:errcheck // a closed conn fails the read
	n, err := b.body.Read(p)
	switch {
	case err == nil:
	case err == io.EOF:
		// The server reads on in the background for the next request;
		// that wait is keepalive_timeout's, not this one's.
		b.conn.SetReadDeadline(time.Time{}) //nolint:errcheck
	default:
		timeout := IsTimeout(err)
		if timeout {
			b.timedOut.Store(true)
		}
		err = &clientBodyError{err: err, timeout: timeout}
	}
	return n, err
}

func (b *timedBody) Close() error { return b.body.Close() }

// clientBodyError is a client's request body that could not be read:
// timeout says whether its client_body_timeout ran out (nginx then closes
// the connection without an answer; otherwise the body is malformed and
// nginx answers 400).
type clientBodyError struct {
	err     error
	timeout bool
}

func (e *clientBodyError) Error() string {
	if e.timeout {
		return "client sent no body bytes within client_body_timeout: " + e.err.Error()
	}
	return "reading the client's body: " + e.err.Error()
}

func (e *clientBodyError) Unwrap() error { return e.err }
