package limiterproxy

import (
	"bufio"
	"io"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// headRecorder is an upstream that records the head of every request it
// gets and answers it 200, closing the connection; it serves one
// connection at a time.
type headRecorder struct {
	ln    net.Listener
	heads chan string
}

func startHeadRecorder(t *testing.T) *headRecorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &headRecorder{ln: ln, heads: make(chan string, 16)}
	go func() {
		for c, err := ln.Accept(); err == nil; c, err = ln.Accept() {
			var head strings.Builder // the request has no body: all it sends
			if _, err := http.ReadRequest(bufio.NewReader(io.TeeReader(c, &head))); err == nil {
				u.heads <- head.String()
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\nKeep-Alive: x\r\nX-Up: 1\r\n\r\nok") //nolint:errcheck
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return u
}

// TestLeanForwardMatchesReverseProxy sends requests through Proxy's lean
// path and through its ReverseProxy alone, and requires the upstream to
// see the same bytes from both, and the client the same answer.
func TestLeanForwardMatchesReverseProxy(t *testing.T) {
	up := startHeadRecorder(t)
	cases := []struct {
		name, method, target string
		header               http.Header
	}{
		{"plain GET", "GET", "http://Site1.Example:8080/a/b?x=1&y=2", nil},
		{"headers, hop-by-hop and forwarding ones", "GET", "http://site1/p", http.Header{
			"User-Agent": {"ua/1"}, "Accept": {"a", "b"}, "Connection": {"keep-alive, X-Drop"}, "X-Drop": {"1"},
			"Keep-Alive": {"timeout=5"}, "Proxy-Authorization": {"secret"}, "X-Forwarded-For": {"10.0.0.1"},
			"X-Forwarded-Host": {"evil"}, "Forwarded": {"for=1.2.3.4"}, "Cookie": {"a=b"}, "Zeta": {"last"},
		}},
		{"empty User-Agent", "HEAD", "http://site1/", http.Header{"User-Agent": {""}}},
		{"POST without a body", "POST", "http://site1/api/method/x", nil},
		{"DELETE without a body", "DELETE", "http://site1/r/1", nil},
		{"escaped path", "GET", "http://site1/a%2Fb/c%20d", nil},
	}
	for _, keepAlive := range []int{0, 4} {
		p := NewProxy(mustURL(t, "http://"+up.ln.Addr().String()), ProxyOptions{UpstreamKeepAlive: keepAlive})
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				newReq := func() *http.Request {
					r := httptest.NewRequest(tc.method, tc.target, nil)
					maps.Copy(r.Header, tc.header)
					return r
				}
				lean := httptest.NewRecorder()
				r := newReq()
				f := forwards.Get().(*forward)
				if !f.head(p, r) {
					t.Fatalf("the lean path does not take it")
				}
				f.put()
				p.ServeHTTP(lean, r)
				leanHead := <-up.heads
				plain := httptest.NewRecorder()
				p.ReverseProxy.ServeHTTP(plain, newReq())
				plainHead := <-up.heads
				if leanHead != plainHead {
					t.Errorf("keepalive %d: the upstream saw\n%q\nfrom the lean path, and from ReverseProxy\n%q", keepAlive, leanHead, plainHead)
				}
				if lean.Code != plain.Code || lean.Body.String() != plain.Body.String() || !equalHeader(lean.Header(), plain.Header()) {
					t.Errorf("keepalive %d: the client got %d %v %q from the lean path, %d %v %q from ReverseProxy",
						keepAlive, lean.Code, lean.Header(), lean.Body, plain.Code, plain.Header(), plain.Body)
				}
			})
		}
	}
}

func equalHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, "\n") != strings.Join(b[k], "\n") {
			return false
		}
	}
	return true
}

// TestLeanForwardLeaves lists what the lean path leaves to ReverseProxy.
func TestLeanForwardLeaves(t *testing.T) {
	p := NewProxy(mustURL(t, "http://127.0.0.1:1"), ProxyOptions{})
	withHeader := func(k, v string) *http.Request {
		r := httptest.NewRequest("GET", "http://site1/", nil)
		r.Header.Set(k, v)
		return r
	}
	for name, r := range map[string]*http.Request{
		"a body":                 httptest.NewRequest("POST", "http://site1/", strings.NewReader("x")),
		"a protocol switch":      withHeader("Upgrade", "websocket"),
		"trailers asked for":     withHeader("Te", "trailers"),
		"a query to re-encode":   httptest.NewRequest("GET", "http://site1/?a=1;b=2", nil),
		"an escape in the query": httptest.NewRequest("GET", "http://site1/?a=%zz", nil),
		"a host not in ASCII":    httptest.NewRequest("GET", "http://xn--bcher-kva.example/", nil),
	} {
		if name == "a host not in ASCII" {
			r.Host = "bücher.example"
		}
		f := forwards.Get().(*forward)
		if f.head(p, r) {
			t.Errorf("%s: the lean path takes it", name)
		}
		f.put()
	}
	if NewProxy(mustURL(t, "http://127.0.0.1:1/base"), ProxyOptions{}).lean {
		t.Errorf("an upstream with a path of its own: the lean path applies")
	}
}

// TestIsEventStream checks isEventStream against mime.ParseMediaType, which
// it calls only for a type that holds the letters of text/event-stream.
func TestIsEventStream(t *testing.T) {
	for _, ct := range []string{"text/event-stream", "Text/Event-Stream; charset=utf-8", " text/event-stream ",
		"TEXT/EVENT-STREAM", "text/event-streams", "text/event-stream;", "text/event-stream; x", "x text/event-stream",
		"text/plain", "", "text/event-\u017ftream", "application/json; profile=text/event-stream"} {
		mt, _, err := mime.ParseMediaType(ct)
		want := err == nil && mt == "text/event-stream"
		if got := isEventStream(ct); got != want {
			t.Errorf("isEventStream(%q) = %v, want %v (mime.ParseMediaType)", ct, got, want)
		}
	}
}
