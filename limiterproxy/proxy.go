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
	"time"

	"stampede/limit"
)

// DefaultConnectTimeout bounds dialing the upstream, as nginx's
// proxy_connect_timeout does by default; over it the proxy answers 504.
const DefaultConnectTimeout = limit.DefaultConnectTimeout

// NewProxy returns a reverse proxy to upstream that behaves as nginx's
// proxy_pass does with `proxy_set_header Host $host`:
//
//   - the client's Host header goes to upstream as nginx's $host (lower-cased,
//     without the port), and
//     X-Forwarded-For, X-Forwarded-Host and X-Forwarded-Proto are set;
//   - unless opts.KeepAlive, every upstream request uses a new connection
//     (nginx speaks HTTP/1.0 without keep-alive to upstreams by default, and
//     gunicorn's sync workers close every connection anyway); with or
//     without it, a request is never silently sent twice;
//   - no response headers within opts.ReadTimeout answers 504 (zero: wait
//     forever), however they trickle in, nor a connection within
//     opts.ConnectTimeout; a refused, reset or closed upstream connection
//     answers 502;
//   - opts.ReadTimeout also bounds each wait for the next bytes of the
//     response body and, without KeepAlive, of an upgraded connection;
//     without KeepAlive, opts.SendTimeout bounds each write to the
//     upstream: the exchange is cut off, as nginx cuts it off, and its
//     limit_conn slot freed;
//   - a client gone before the response is answered nothing, and a client
//     that fails to send its body (ServerOptions.ClientBodyTimeout) ends
//     the exchange: nothing is answered on a timeout, 400 on a malformed
//     body, as nginx does.
//
// The proxy logs nothing: its errors are in the statuses it answers.
// Environment proxy settings (HTTP_PROXY) are ignored. The returned proxy is
// safe for concurrent use; its fields may be changed before first use.
func NewProxy(upstream *url.URL, opts ProxyOptions) *httputil.ReverseProxy {
	connectTimeout := opts.ConnectTimeout
	if connectTimeout <= 0 {
		connectTimeout = DefaultConnectTimeout
	}
	dialer := &net.Dialer{Timeout: connectTimeout, KeepAlive: -1} // no TCP keep-alive probes on a connection used once
	var transport http.RoundTripper = newOneShot(upstream, dialer, opts.ReadTimeout, opts.SendTimeout)
	if opts.KeepAlive {
		transport = &http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			MaxIdleConns:          maxIdleUpstream,
			MaxIdleConnsPerHost:   maxIdleUpstream,
			ResponseHeaderTimeout: opts.ReadTimeout,
			// The upstream is a plain-HTTP app server; nginx does not ask
			// it for compressed bodies either.
			DisableCompression: true,
			ForceAttemptHTTP2:  false,
		}
	}
	var modify func(*http.Response) error
	if opts.KeepAlive && opts.ReadTimeout > 0 {
		modify = func(resp *http.Response) error {
			if resp.StatusCode != http.StatusSwitchingProtocols {
				resp.Body = &idleBody{body: resp.Body, timeout: opts.ReadTimeout}
			}
			return nil
		}
	}
	return &httputil.ReverseProxy{
		ModifyResponse: modify,
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
			switch {
			case !opts.KeepAlive:
				// "Connection: close", as nginx's HTTP/1.0 says, but not
				// beside the "Connection: Upgrade" of a protocol switch.
				pr.Out.Close = pr.Out.Header.Get("Upgrade") == ""
			case pr.Out.Body == nil || pr.Out.Body == http.NoBody:
				pr.Out.Body = noReplay{}
			}
		},
		Transport:    transport,
		BufferPool:   &copyBuffers,
		ErrorLog:     log.New(io.Discard, "", 0),
		ErrorHandler: proxyError,
	}
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

// maxIdleUpstream bounds the idle upstream connections KeepAlive keeps.
const maxIdleUpstream = 1024

// noReplay is an empty request body that makes a body-less request
// non-replayable. Go's transport sends a GET again, on its own, when a reused
// connection closes before any response byte; a worker killed by its timeout
// closes its connection exactly so, and must answer 502 once, not run the
// request twice. The transport still sends no body: it finds noReplay empty.
type noReplay struct{}

func (noReplay) Read([]byte) (int, error) { return 0, io.EOF }
func (noReplay) Close() error             { return nil }

// proxyError answers a request the upstream failed: 504 for a timeout, 502
// for anything else, nothing if the client is gone or let its body time
// out (nginx closes the connection then), 400 for a body the client sent
// malformed.
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
		return
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

// idleBody is a response body read through http.Transport (KeepAlive)
// whose every read must bring bytes within timeout, as nginx's
// proxy_read_timeout bounds the time between two successive reads: past
// it the body is closed, which fails the read and cuts the response off.
// The timer runs only while a read waits.
type idleBody struct {
	body    io.ReadCloser
	timeout time.Duration
	timer   *time.Timer
}

func (b *idleBody) Read(p []byte) (int, error) {
	if b.timer == nil {
		b.timer = time.AfterFunc(b.timeout, func() { b.body.Close() })
	} else {
		b.timer.Reset(b.timeout)
	}
	n, err := b.body.Read(p)
	b.timer.Stop()
	return n, err
}

func (b *idleBody) Close() error {
	if b.timer != nil {
		b.timer.Stop()
	}
	return b.body.Close()
}
