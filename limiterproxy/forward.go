package limiterproxy

import (
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"stampede/limit"
)

// Proxy is the reverse proxy NewProxy returns. A request without a body
// or a protocol switch, the bulk of what a proxy in front of an app
// carries, it forwards itself: it writes the upstream request's head in
// one piece, as httputil.ReverseProxy with NewProxy's Rewrite and
// http.Request.Write would write it (the same lines, in the same order),
// and copies the answer back as ReverseProxy does, without the request
// clone, the header maps and the per-request closures that cost ReverseProxy
// a fifth of the proxy's CPU. Everything else goes to the embedded
// ReverseProxy.
type Proxy struct {
	*httputil.ReverseProxy
	t         *upstreamTransport
	upstream  *url.URL
	keepAlive bool
	// lean says the upstream URL has no path or query of its own to join
	// to the request's, so that the lean path applies at all.
	lean bool
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rc, ok := r.Context().Value(clientConnKey{}).(syscall.RawConn); ok && clientGone(rc) {
		// The client ended its side (FIN) with its request, or went
		// away since. nginx checks the client as soon as the request is
		// on its way to the upstream (ngx_http_upstream_init_request
		// posts the read event, and EPOLLRDHUP came with the head): it
		// ends the request with 499, writes nothing and closes the
		// upstream connection, however soon the upstream would answer.
		// The server's watch, which starts later, would let a quick
		// answer through.
		panic(http.ErrAbortHandler)
	}
	f := forwards.Get().(*forward)
	defer f.put()
	if !p.lean || !f.head(p, r) {
		p.ReverseProxy.ServeHTTP(w, r)
		return
	}
	f.out = *r // r's context, method and fields, for the transport
	f.out.URL, f.out.Body, f.out.Close = p.upstream, nil, !p.keepAlive
	resp, err := p.t.roundTrip(&f.out, f.buf)
	if err != nil {
		proxyError(w, r, err)
		return
	}
	p.answer(w, r, resp)
}

// answer writes resp, the upstream's response to the lean request r, to
// w as ReverseProxy would: its header less the hop-by-hop fields, its
// body, its trailers. A body that fails midway aborts the response
// (panics with http.ErrAbortHandler).
func (p *Proxy) answer(w http.ResponseWriter, r *http.Request, resp *http.Response) {
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// Asked for no switch: ReverseProxy's answer to it.
		resp.Body.Close()
		proxyError(w, r, errors.New("upstream switched protocols unasked"))
		return
	}
	removeHopByHop(resp.Header)
	h := w.Header()
	for k, vv := range resp.Header {
		if len(h[k]) == 0 {
			// The response's header is not read again: its values may
			// be shared rather than copied.
			h[k] = vv
			continue
		}
		h[k] = append(h[k], vv...)
	}
	announced := len(resp.Trailer)
	if announced > 0 {
		keys := make([]string, 0, announced)
		for k := range resp.Trailer {
			keys = append(keys, k)
		}
		h.Add("Trailer", strings.Join(keys, ", "))
	}
	w.WriteHeader(resp.StatusCode)
	if err := copyBody(w, resp); err != nil {
		// As ReverseProxy: a response cut off mid-body can only be
		// aborted.
		resp.Body.Close()
		panic(http.ErrAbortHandler)
	}
	resp.Body.Close() // fills resp.Trailer
	if len(resp.Trailer) > 0 {
		http.NewResponseController(w).Flush() //nolint:errcheck // force chunking, as ReverseProxy does
		for k, vv := range resp.Trailer {
			if announced == len(resp.Trailer) {
				h[k] = append(h[k], vv...)
			} else {
				h[http.TrailerPrefix+k] = append(h[http.TrailerPrefix+k], vv...)
			}
		}
	}
}

// copyBody copies resp's body to w through a pooled buffer, flushing after
// every write when the body's length is unknown or it is an event
// stream, as ReverseProxy does; the error is the first read's other than
// io.EOF, or the first write's.
func copyBody(w http.ResponseWriter, resp *http.Response) error {
	flush := resp.ContentLength == -1 || isEventStream(resp.Header.Get("Content-Type"))
	buf := copyBuffers.Get()
	defer copyBuffers.Put(buf)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return err
			}
			if flush {
				http.NewResponseController(w).Flush() //nolint:errcheck // the next write says
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// isEventStream reports whether the Content-Type ct is text/event-stream,
// as ReverseProxy tells it with mime.ParseMediaType; a type that does not
// hold those letters in any ASCII case, nearly every one, is not parsed.
func isEventStream(ct string) bool {
	const es = "text/event-stream"
	if !containsFold(ct, es) {
		return false
	}
	t, _, err := mime.ParseMediaType(ct)
	return err == nil && t == es
}

// containsFold reports whether s holds the lower-case ASCII sub, in any
// ASCII case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// hopByHop are the headers ReverseProxy drops both ways (RFC 9110 7.6.1),
// beside those the Connection header names.
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// removeHopByHop drops h's hop-by-hop headers, as ReverseProxy does.
func removeHopByHop(h http.Header) {
	for _, v := range h["Connection"] {
		for f := range strings.SplitSeq(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				h.Del(f)
			}
		}
	}
	for k := range h {
		// A switch on the few names the header has, not a lookup of
		// every hop-by-hop name: canonical already.
		switch k {
		case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
			"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade":
			delete(h, k)
		}
	}
}

// forward is one lean exchange's state, pooled: the upstream request's
// head and the request the transport sees.
type forward struct {
	buf  []byte
	keys []string
	out  http.Request
}

var forwards = sync.Pool{New: func() any { return &forward{buf: make([]byte, 0, 1024)} }}

func (f *forward) put() {
	if cap(f.buf) > 64<<10 {
		return
	}
	f.buf, f.keys, f.out = f.buf[:0], f.keys[:0], http.Request{}
	forwards.Put(f)
}

// head writes into f.buf the head of the upstream request for r, as
// ReverseProxy with NewProxy's Rewrite and http.Request.Write make it:
// the request line; Host as nginx's $host; the client's User-Agent;
// "Connection: close" without keep-alive; "Content-Length: 0" for a POST,
// PUT or PATCH; then, sorted by name, the client's headers less the
// hop-by-hop ones, those the Connection header names and the forwarding
// ones, with X-Forwarded-For, X-Forwarded-Host and X-Forwarded-Proto set
// afresh. It reports false for a request the lean path leaves to
// ReverseProxy: one with a body, asking for a protocol switch or for
// trailers (Te), whose query ReverseProxy would re-encode (a ';' or a
// '%'), whose Host is not plain ASCII or names an IPv6 zone, or without a
// client address.
func (f *forward) head(p *Proxy, r *http.Request) bool {
	if r.Body != nil && r.Body != http.NoBody || r.ContentLength != 0 || r.URL.Opaque != "" ||
		strings.ContainsAny(r.URL.RawQuery, ";%") {
		return false
	}
	if _, ok := r.Header["Upgrade"]; ok {
		return false
	}
	if _, ok := r.Header["Te"]; ok {
		return false
	}
	host, ok := limit.NormalizeHost(r.Host)
	if !ok || !isASCII(host) || !isASCII(r.Host) || strings.Contains(host, "%") {
		return false
	}
	clientIP, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	b := f.buf[:0]
	b = append(b, r.Method...)
	b = append(b, ' ')
	b = append(b, r.URL.RequestURI()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	if ua := r.Header["User-Agent"]; len(ua) > 0 && ua[0] != "" {
		b = appendField(b, "User-Agent", ua[0])
	}
	if !p.keepAlive {
		b = append(b, "Connection: close\r\n"...)
	}
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		b = append(b, "Content-Length: 0\r\n"...)
	}
	keys := f.keys[:0]
	for k := range r.Header {
		if !skipForward(k, r.Header) {
			keys = append(keys, k)
		}
	}
	keys = append(keys, "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto")
	slices.Sort(keys)
	for _, k := range keys {
		switch k {
		case "X-Forwarded-For":
			b = appendField(b, k, clientIP)
		case "X-Forwarded-Host":
			b = appendField(b, k, r.Host)
		case "X-Forwarded-Proto":
			b = appendField(b, k, "http")
		default:
			for _, v := range r.Header[k] {
				b = appendField(b, k, v)
			}
		}
	}
	f.buf, f.keys = append(b, "\r\n"...), keys
	return true
}

// skipForward reports whether the client's header k does not go
// upstream as it came: hop-by-hop, named by Connection, one the head
// writes itself, or a forwarding header set afresh.
func skipForward(k string, h http.Header) bool {
	switch k {
	case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer",
		"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto":
		return true
	}
	if slices.Contains(hopByHop, k) {
		return true
	}
	for _, v := range h["Connection"] {
		for t := range strings.SplitSeq(v, ",") {
			if http.CanonicalHeaderKey(strings.TrimSpace(t)) == k {
				return true
			}
		}
	}
	return false
}

// appendField appends the header line "k: v", v with CR and LF turned
// into spaces and trimmed, as http.Header.Write writes it.
func appendField(b []byte, k, v string) []byte {
	b = append(b, k...)
	b = append(b, ": "...)
	if strings.ContainsAny(v, "\r\n") {
		v = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ").Replace(v)
	}
	b = append(b, strings.Trim(v, " \t")...)
	return append(b, "\r\n"...)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
