package limiterproxy

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"

	"stampede/limit"
)

// DefaultConnectTimeout bounds dialing the upstream, as nginx's
// proxy_connect_timeout does by default; over it the proxy answers 504.
const DefaultConnectTimeout = limit.DefaultConnectTimeout

// MaxUpstreamKeepAlive bounds ProxyOptions.UpstreamKeepAlive: more idle
// upstream connections than the proxy serves clients at once by default
// (and than the exported nginx.conf's worker_connections) could never
// fill.
const MaxUpstreamKeepAlive = limit.MaxUpstreamKeepAlive

// DialFunc opens a connection to address on network, as
// net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// NewProxy returns a reverse proxy to upstream that behaves as nginx's
// proxy_pass does with `proxy_set_header Host $host`:
//
//   - the client's Host header goes to upstream as nginx's $host (lower-cased,
//     without the port), and
//     X-Forwarded-For, X-Forwarded-Host and X-Forwarded-Proto are set;
//   - without opts.UpstreamKeepAlive, every upstream request uses a new
//     connection and says "Connection: close" (nginx speaks HTTP/1.0
//     without keep-alive to upstreams by default, and gunicorn's sync
//     workers close every connection anyway);
//   - with opts.UpstreamKeepAlive N, as nginx with `upstream { keepalive N; }`,
//     `proxy_http_version 1.1` and `proxy_set_header Connection ""`: a
//     connection whose response was read to its end, HTTP/1.1 without
//     "Connection: close", after the whole request body, waits idle for the
//     next request; at most N wait, the least recently used closing
//     beyond that, each for at most 60 s (keepalive_timeout), for at most
//     1000 requests (keepalive_requests) and one hour (keepalive_time);
//     one the upstream closes while idle is not used again. N bounds the
//     proxy as nginx's bounds each worker process; over
//     MaxUpstreamKeepAlive it is MaxUpstreamKeepAlive. A reused connection
//     that fails before the response (the upstream closed it as the
//     request went out) sends the request once more on the next
//     connection, as nginx's default proxy_next_upstream does, unless
//     opts.NextUpstreamOff, the request has a body, or it is a POST, LOCK
//     or PATCH; a fresh connection's failure answers 502, never a retry;
//   - no response headers within opts.ReadTimeout answers 504 (zero: wait
//     forever), however they trickle in, nor a connection within
//     opts.ConnectTimeout; a refused, reset or closed upstream connection
//     answers 502;
//   - opts.ReadTimeout also bounds each wait for the next bytes of the
//     response body and of an upgraded connection; opts.SendTimeout
//     bounds each write to the upstream: the exchange is cut off, as
//     nginx cuts it off, and its limit_conn slot freed;
//   - a client gone before the response, or that only ended its side
//     (FIN), even with its request, is answered nothing, and a client
//     that fails to send its body (ServerOptions.ClientBodyTimeout) ends
//     the exchange: nothing is answered on a timeout, 400 on a malformed
//     body, as nginx does.
//
// The proxy logs nothing: its errors are in the statuses it answers.
// Environment proxy settings (HTTP_PROXY) are ignored. The returned proxy is
// safe for concurrent use; the fields of its ReverseProxy serve only what
// its lean path leaves to it (see Proxy), and must not change.
func NewProxy(upstream *url.URL, opts ProxyOptions) *Proxy {
	connectTimeout := opts.ConnectTimeout
	if connectTimeout <= 0 {
		connectTimeout = DefaultConnectTimeout
	}
	dialer := &net.Dialer{Timeout: connectTimeout, KeepAlive: -1} // no TCP keep-alive probes, as nginx's proxy_socket_keepalive off
	t := newUpstreamTransport(upstream, dialer, opts.ReadTimeout, opts.SendTimeout)
	t.noRetry = opts.NextUpstreamOff
	if opts.Dial != nil {
		dial := opts.Dial
		t.dial = func(ctx context.Context, network, address string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, connectTimeout)
			defer cancel()
			return dial(ctx, network, address)
		}
	}
	keepAlive := opts.UpstreamKeepAlive > 0
	if keepAlive {
		t.pool = newIdlePool(min(opts.UpstreamKeepAlive, MaxUpstreamKeepAlive))
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			// nginx's proxy_set_header Host $host: without the port,
			// lower-cased.
			if h, ok := limit.NormalizeHost(pr.In.Host); ok {
				pr.Out.Host = h
			} else {
				pr.Out.Host = pr.In.Host
			}
			pr.SetXForwarded()
			// Without keep-alive "Connection: close", as nginx's HTTP/1.0
			// says, but not beside the "Connection: Upgrade" of a
			// protocol switch; with it no Connection header, as
			// `proxy_set_header Connection ""` sends.
			pr.Out.Close = !keepAlive && pr.Out.Header.Get("Upgrade") == ""
		},
		Transport:    t,
		BufferPool:   &copyBuffers,
		ErrorLog:     log.New(io.Discard, "", 0),
		ErrorHandler: proxyError,
	}
	lean := (upstream.Path == "" || upstream.Path == "/") && upstream.RawPath == "" && upstream.RawQuery == "" && !upstream.ForceQuery
	return &Proxy{ReverseProxy: rp, t: t, upstream: upstream, keepAlive: keepAlive, lean: lean}
}

// copyBuffers recycles the buffers the proxy copies response bodies through;
// without it every response allocates and clears 32 KiB.
var copyBuffers bufferPool

// bufferPool pools 32 KiB buffers. The pool holds *[]byte; the holders are
// pooled too, so that giving a buffer back allocates nothing.
type bufferPool struct{ bufs, holders sync.Pool }

func (b *bufferPool) Get() []byte {
	h, ok := b.bufs.Get().(*[]byte)
	if !ok {
		return make([]byte, 32<<10)
	}
	buf := *h
	*h = nil
	b.holders.Put(h)
	return buf
}

func (b *bufferPool) Put(buf []byte) {
	h, ok := b.holders.Get().(*[]byte)
	if !ok {
		h = new([]byte)
	}
	*h = buf
	b.bufs.Put(h)
}

// proxyError answers a request the upstream failed: 504 for a timeout, 502
// for anything else, nothing if the client is gone or let its body time
// out (nginx closes the connection then; so does the server, as
// proxyError panics with http.ErrAbortHandler), 400 for a body the client
// sent malformed.
func proxyError(w http.ResponseWriter, r *http.Request, err error) {
	var be *clientBodyError
	if errors.As(err, &be) {
		if be.timeout {
			panic(http.ErrAbortHandler)
		}
		w.Header().Set("Connection", "close")
		http.Error(w, "400 Bad Request: malformed request body", http.StatusBadRequest)
		return
	}
	if r.Context().Err() != nil {
		// The client went away, or only ended its side (FIN), which
		// nginx takes alike (a 499): its connection closes with nothing
		// written, rather than the empty 200 a server writes for a
		// handler that wrote nothing.
		panic(http.ErrAbortHandler)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if IsTimeout(err) {
		w.WriteHeader(http.StatusGatewayTimeout)
		io.WriteString(w, "504 Gateway Timeout: upstream did not answer in time\n") //nolint:errcheck
		return
	}
	w.WriteHeader(http.StatusBadGateway)
	io.WriteString(w, "502 Bad Gateway: upstream refused or closed the connection\n") //nolint:errcheck
}

// IsTimeout reports whether err is a timeout: a deadline exceeded or a
// net.Error that says so (the transport's response header timeout is one).
func IsTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
