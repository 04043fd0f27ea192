package limiterproxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"
)

// gate is an upstream handler that holds every request until released (or
// the request's context ends), so tests decide when responses happen
// instead of racing timers. arrived receives one value per request as it
// reaches the handler.
type gate struct {
	arrived chan string // the request's Host
	release chan struct{}
	once    sync.Once
}

func newGate(capacity int) *gate {
	return &gate{arrived: make(chan string, capacity), release: make(chan struct{})}
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.arrived <- r.Host
	select {
	case <-g.release:
		io.WriteString(w, "ok\n")
	case <-r.Context().Done():
	}
}

// open lets every held and future request through.
func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

// await waits for n requests to reach the gate.
func (g *gate) await(t *testing.T, n int) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for i := 0; i < n; i++ {
		select {
		case <-g.arrived:
		case <-timeout.C:
			t.Fatalf("only %d of %d requests reached the upstream", i, n)
		}
	}
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// get sends GET path to srv with the Host header host and returns the
// status and body.
func get(t *testing.T, client *http.Client, base, host string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest("GET", base+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	return do(t, client, req)
}

// do sends req with client and returns the status, body and header of its
// response; a request that gets no response fails t.
func do(t testing.TB, client *http.Client, req *http.Request) (int, string, http.Header) {
	t.Helper()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s Host %s: %v", req.Method, req.URL, req.Host, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

func TestProxyHostAndForwarding(t *testing.T) {
	type seen struct {
		host, xff, conn string
		close           bool
	}
	got := make(chan seen, 1)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Host, r.Header.Get("X-Forwarded-For"), r.Header.Get("Connection"), r.Close}
		io.WriteString(w, "hello")
	}))
	defer backend.Close()
	front := httptest.NewServer(NewProxy(mustURL(t, backend.URL), ProxyOptions{}))
	defer front.Close()

	status, body, _ := get(t, front.Client(), front.URL, "Site1.Example:8080")
	if status != 200 || body != "hello" {
		t.Fatalf("GET = %d %q, want 200 \"hello\"", status, body)
	}
	s := <-got
	if s.host != "site1.example" {
		t.Errorf("upstream Host = %q, want nginx's $host %q", s.host, "site1.example")
	}
	if s.xff != "127.0.0.1" {
		t.Errorf("upstream X-Forwarded-For = %q, want 127.0.0.1", s.xff)
	}
	if !s.close {
		t.Errorf("upstream request without Connection: close; want no keep-alive to upstream")
	}
}

func TestProxyErrors(t *testing.T) {
	hijackClose := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		c.Close() // a killed worker: the connection drops with no answer
	})
	g := newGate(1)
	defer g.open()

	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedURL := "http://" + refused.Addr().String()
	refused.Close()

	tests := []struct {
		name     string
		upstream http.Handler // nil: a closed port
		opts     ProxyOptions
		want     int
	}{
		{"killed worker", hijackClose, ProxyOptions{}, http.StatusBadGateway},
		{"refused", nil, ProxyOptions{}, http.StatusBadGateway},
		{"read timeout", g, ProxyOptions{ReadTimeout: 50 * time.Millisecond}, http.StatusGatewayTimeout},
		{"panic", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }), ProxyOptions{}, http.StatusBadGateway},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := refusedURL
			if tt.upstream != nil {
				backend := httptest.NewServer(tt.upstream)
				defer backend.Close()
				target = backend.URL
			}
			front := httptest.NewServer(NewProxy(mustURL(t, target), tt.opts))
			defer front.Close()
			status, body, _ := get(t, front.Client(), front.URL, "site1")
			if status != tt.want {
				t.Errorf("status = %d %q, want %d", status, body, tt.want)
			}
		})
	}
}

// TestProxyClientGone checks that a client gone before the upstream answered
// is answered nothing: no status is written for it, and the handler panics
// with http.ErrAbortHandler, so that the server writes none either (a
// client that only half-closed would read it).
func TestProxyClientGone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequest("GET", "/", nil).WithContext(ctx)
	w := httptest.NewRecorder()
	func() {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Errorf("proxyError for a gone client: recovered %v, want http.ErrAbortHandler", v)
			}
		}()
		proxyError(w, r, context.Canceled)
	}()
	if w.Code != 200 || w.Body.Len() != 0 || len(w.Header()) != 0 {
		t.Errorf("proxyError for a gone client wrote %d %q %v, want nothing", w.Code, w.Body.String(), w.Header())
	}
}

func TestIsTimeout(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{context.DeadlineExceeded, true},
		{&net.OpError{Op: "read", Err: timeoutErr{}}, true},
		{io.EOF, false},
		{context.Canceled, false},
		{&net.OpError{Op: "dial", Err: io.ErrUnexpectedEOF}, false},
	}
	for i, tt := range tests {
		if got := IsTimeout(tt.err); got != tt.want {
			t.Errorf("step %d: IsTimeout(%v) = %t, want %t", i, tt.err, got, tt.want)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// TestProxyNoRetry checks that a GET the upstream killed is not sent again:
// the transport must not retry it on another connection.
func TestProxyNoRetry(t *testing.T) {
	hits := make(chan struct{}, 10)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits <- struct{}{}
		c, _, _ := http.NewResponseController(w).Hijack()
		c.Close()
	}))
	defer backend.Close()
	front := httptest.NewServer(NewProxy(mustURL(t, backend.URL), ProxyOptions{}))
	defer front.Close()
	for i := 0; i < 3; i++ {
		if status, _, _ := get(t, front.Client(), front.URL, "site1"); status != 502 {
			t.Fatalf("step %d: status %d, want 502", i, status)
		}
	}
	if n := len(hits); n != 3 {
		t.Errorf("upstream saw %d requests for 3 GETs, want 3 (no retries)", n)
	}
}

// TestBufferPoolRecycles checks that the copy buffers come back and that
// giving one back allocates nothing once the pool is warm.
func TestBufferPoolRecycles(t *testing.T) {
	var p bufferPool
	buf := p.Get()
	if len(buf) != 32<<10 {
		t.Fatalf("Get returned %d bytes, want 32 KiB", len(buf))
	}
	allocs := testing.AllocsPerRun(100, func() {
		p.Put(buf)
		buf = p.Get()
	})
	// sync.Pool may drop what it holds at a GC, which then allocates a
	// fresh buffer; a steady Put and Get allocates nothing.
	if allocs >= 1 {
		t.Errorf("Put and Get allocate %.1f times a round, want none", allocs)
	}
}
