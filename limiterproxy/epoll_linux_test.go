//go:build linux

package limiterproxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"stampede/limit"
)

func init() {
	finCork = func(t *testing.T, c *net.TCPConn) {
		rc, err := c.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_CORK, 1) }); err != nil || serr != nil {
			t.Fatalf("TCP_CORK: %v %v", err, serr)
		}
	}
	finEpoll = func(t *testing.T, h http.Handler) string {
		return startEpoll(t, h, ServerOptions{WatchDelay: ProxyWatchDelay}, 1)
	}
	startEpollOneLoop = func(t *testing.T, cfg limit.Config, upstream string) string {
		p, err := limit.NewPolicy(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if got := p.Busiest(10); len(got) != 0 {
				t.Errorf("stampede epoll: keys still in flight after the run: %v", got)
			}
		})
		return startEpoll(t, &Handler{Policy: p, Next: NewProxy(mustURL(t, upstream), ProxyOptions{UpstreamKeepAlive: 8})}, ServerOptions{}, 1)
	}
	kaFronts = append(kaFronts, kaFront{name: "epoll", start: startEpollFront, skip: map[string]string{
		// A POST is handed off to the lean server, whose idle upstream
		// connections are not the loop's: it cannot take the one the
		// GET before it left, as a request on another nginx worker
		// cannot. nginx with one worker has one pool.
		"reused-dropped-post": "a POST is handed off and does not reuse the loop's idle connection (as on another nginx worker)",
	}})
	proxyServers = append(proxyServers, struct {
		name string
		new  func(http.Handler, ServerOptions) server
	}{"stampede epoll", newEpollForTest})
}

// newEpollForTest is the epoll server of h on two loops. A *Handler's
// Proxy gets upstream keep-alive, which the epoll server serves in its
// loops (and nginx's statuses do not depend on): its lean path is what
// the suites hold to nginx, its hand-off what they hold to the rest.
func newEpollForTest(h http.Handler, o ServerOptions) server {
	if hh, ok := h.(*Handler); ok {
		if p, ok := hh.Next.(*Proxy); ok && !p.keepAlive {
			hh.Next = withKeepAlive(p, 8)
		}
	}
	o.WatchDelay = ProxyWatchDelay
	s, err := NewEpollServer(h, o, 2)
	if err != nil {
		panic(err)
	}
	return s
}

// withKeepAlive is p with upstream keep-alive n, its other options kept.
func withKeepAlive(p *Proxy, n int) *Proxy {
	t := p.t
	opts := ProxyOptions{ReadTimeout: t.readTimeout, SendTimeout: t.sendTimeout, ConnectTimeout: t.dialer.Timeout,
		NextUpstreamOff: t.noRetry, UpstreamKeepAlive: n}
	if t.dial != nil {
		opts.Dial = t.dial
	}
	return NewProxy(p.upstream, opts)
}

// startEpollFront serves p behind a Handler with no limits on an epoll
// server of one loop (one pool of idle connections, as nginx with one
// worker) until the test ends, and returns its base URL.
func startEpollFront(t testing.TB, p *Proxy) string {
	t.Helper()
	return startEpoll(t, &Handler{Policy: nil, Next: p}, ServerOptions{}, 1)
}

// startEpoll serves h on an epoll server of loops loops until the test
// ends, and returns its base URL.
func startEpoll(t testing.TB, h http.Handler, o ServerOptions, loops int) string {
	t.Helper()
	s, err := NewEpollServer(h, o, loops)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := ListenReusePort("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	return serveUntilEnd(t, s, ln)
}

// epollEcho is an upstream whose answers depend only on the request: its
// method, URI, Host and header, sorted; /chunked answers in two flushed
// pieces, /big with more than a loop holds, /hold waits for release or
// for the proxy to close the connection.
func epollEcho(t *testing.T) (*httptest.Server, *epollHolds) {
	t.Helper()
	holds := &epollHolds{held: make(chan string, 16), gone: make(chan string, 16), release: make(chan struct{})}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/chunked":
			io.WriteString(w, "one ")
			w.(http.Flusher).Flush()
			io.WriteString(w, "two")
			return
		case "/big":
			w.Write(bytes.Repeat([]byte("b"), maxLoopBody+1))
			return
		case "/hold":
			id := r.Header.Get("X-Id")
			holds.held <- id
			select {
			case <-holds.release:
			case <-r.Context().Done():
				holds.gone <- id
				return
			}
		}
		body, _ := io.ReadAll(r.Body)
		keys := make([]string, 0, len(r.Header))
		for k := range r.Header {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		w.Header().Set("X-Echo", "1")
		fmt.Fprintf(w, "%s %s host=%s body=%q\n", r.Method, r.RequestURI, r.Host, body)
		for _, k := range keys {
			fmt.Fprintf(w, "%s: %q\n", k, r.Header[k])
		}
	}))
	t.Cleanup(up.Close)
	return up, holds
}

type epollHolds struct {
	held, gone chan string
	release    chan struct{}
}

// closedExchange sends req on a new connection to addr and returns all it
// reads until the server closes, the Date lines blanked.
func closedExchange(t *testing.T, addr, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", req, err)
	}
	return dechunk(t, dateLine.ReplaceAllString(string(b), "Date: -\r\n"))
}

// dechunk writes the chunked body of the answer a, if it has one, as its
// bytes: where a streamed body's chunks end depends on when its pieces
// came.
func dechunk(t *testing.T, a string) string {
	head, body, ok := strings.Cut(a, "\r\n\r\n")
	if !ok || !strings.Contains(head+"\r\n", "Transfer-Encoding: chunked\r\n") {
		return a
	}
	br := bufio.NewReader(strings.NewReader(body))
	b, err := io.ReadAll(httputil.NewChunkedReader(br))
	if err != nil {
		t.Errorf("the chunked body of %q: %v", a, err)
	}
	rest, _ := io.ReadAll(br)
	return head + "\r\n\r\n<chunked " + string(b) + ">" + dechunk(t, strings.TrimPrefix(string(rest), "\r\n"))
}

var dateLine = regexp.MustCompile(`Date: [^\r]*\r\n`)

// TestEpollAnswersAsLeanServer sends the same bytes to the epoll server
// and to the lean server, each with a Handler and a keep-alive Proxy to
// the same upstream, and holds every answer byte for byte (Date aside):
// the requests the loops serve, those they hand off with the bytes read
// so far (a body, Expect, Upgrade, HTTP/1.0, a long head, a query the
// Proxy leaves to ReverseProxy, a bad Host, pipelined mixes), and the
// answers streamed (chunked, over maxLoopBody).
func TestEpollAnswersAsLeanServer(t *testing.T) {
	up, _ := epollEcho(t)
	cfg := limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 10}}}
	newHandler := func() *Handler {
		p, err := limit.NewPolicy(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return &Handler{Policy: p, Next: NewProxy(mustURL(t, up.URL), ProxyOptions{UpstreamKeepAlive: 4, ReadTimeout: 10 * time.Second})}
	}
	lean := strings.TrimPrefix(startProxyServer(t, NewLeanServer(newHandler(), ServerOptions{WatchDelay: ProxyWatchDelay})), "http://")
	es, err := NewEpollServer(newHandler(), ServerOptions{WatchDelay: ProxyWatchDelay}, 2)
	if err != nil {
		t.Fatal(err)
	}
	epoll := strings.TrimPrefix(startProxyServer(t, es), "http://")

	long := strings.Repeat("x", maxLoopHead)
	cases := []struct {
		name, req string
		where     string // lean, handed or streamed
	}{
		{"get", "GET /ok?a=1 HTTP/1.1\r\nHost: Site1:80\r\nUser-Agent: t\r\nAccept: */*\r\nConnection: close\r\n\r\n", "lean"},
		{"head", "HEAD /ok HTTP/1.1\r\nHost: site1\r\nConnection: close\r\n\r\n", "lean"},
		{"keep-alive then close", "GET /ok HTTP/1.1\r\nHost: site1\r\n\r\nGET /two HTTP/1.1\r\nHost: site2\r\nConnection: close\r\n\r\n", "lean"},
		{"hop-by-hop", "GET /ok HTTP/1.1\r\nHost: site1\r\nConnection: close, X-Drop\r\nX-Drop: 1\r\nX-Forwarded-For: 10.0.0.1\r\nKeep-Alive: 5\r\n\r\n", "lean"},
		{"post", "POST /ok HTTP/1.1\r\nHost: site1\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbody", "handed"},
		{"chunked request", "POST /ok HTTP/1.1\r\nHost: site1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n4\r\nbody\r\n0\r\n\r\n", "handed"},
		{"expect", "GET /ok HTTP/1.1\r\nHost: site1\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n", "handed"},
		{"upgrade", "GET /ok HTTP/1.1\r\nHost: site1\r\nConnection: Upgrade, close\r\nUpgrade: websocket\r\n\r\n", "handed"},
		{"http/1.0", "GET /ok HTTP/1.0\r\nHost: site1\r\n\r\n", "handed"},
		{"long head", "GET /ok HTTP/1.1\r\nHost: site1\r\nX-Long: " + long + "\r\nConnection: close\r\n\r\n", "handed"},
		{"escaped query", "GET /ok?q=%41;b HTTP/1.1\r\nHost: site1\r\nConnection: close\r\n\r\n", "handed"},
		{"bad host", "GET /ok HTTP/1.1\r\nHost: a/b\r\nConnection: close\r\n\r\n", "handed"},
		{"no host", "GET /ok HTTP/1.1\r\nConnection: close\r\n\r\n", "handed"},
		{"two content-lengths", "POST /ok HTTP/1.1\r\nHost: site1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", "handed"},
		{"obs-fold", "GET /ok HTTP/1.1\r\nHost: site1\r\nX-A: 1\r\n 2\r\nConnection: close\r\n\r\n", "handed"},
		{"trace", "TRACE /ok HTTP/1.1\r\nHost: site1\r\nConnection: close\r\n\r\n", "handed"},
		{"lean then post", "GET /ok HTTP/1.1\r\nHost: site1\r\n\r\nPOST /ok HTTP/1.1\r\nHost: site1\r\nContent-Length: 2\r\n\r\nhiGET /ok HTTP/1.1\r\nHost: site1\r\nConnection: close\r\n\r\n", "lean+handed"},
		{"chunked answer", "GET /chunked HTTP/1.1\r\nHost: site1\r\nConnection: close\r\n\r\n", "streamed"},
		{"chunked answer, kept", "GET /chunked HTTP/1.1\r\nHost: site1\r\n\r\nGET /ok HTTP/1.1\r\nHost: site1\r\nConnection: close\r\n\r\n", "streamed+handed"},
		{"big answer", "GET /big HTTP/1.1\r\nHost: site1\r\nConnection: close\r\n\r\n", "streamed"},
		{"garbage", "HELLO\r\n\r\n", "handed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l0, h0, s0 := es.lean.Load(), es.handed.Load(), es.streamed.Load()
			want := closedExchange(t, lean, tc.req)
			got := closedExchange(t, epoll, tc.req)
			if got != want {
				t.Errorf("epoll server answered\n%q\nthe lean server\n%q", got, want)
			}
			where := []string{}
			if es.lean.Load() > l0 && !strings.HasPrefix(tc.where, "streamed") {
				where = append(where, "lean")
			}
			if es.streamed.Load() > s0 {
				where = append(where, "streamed")
			}
			if es.handed.Load() > h0 {
				where = append(where, "handed")
			}
			if got := strings.Join(where, "+"); got != tc.where {
				t.Errorf("served %s, want %s", got, tc.where)
			}
		})
	}
}

// startProxyServer serves srv on a loopback port until the test ends and
// returns its base URL.
func startProxyServer(t *testing.T, srv server) string {
	t.Helper()
	ln, err := ListenReusePort("127.0.0.1:0", ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return serveUntilEnd(t, srv, ln)
}

// TestEpollSlotHeldUntilClientGoes holds limit_conn $host=1 in a loop: the
// holder's slot turns the next request away with the Handler's answer;
// when the holder's client hangs up, the loop closes its upstream
// connection and frees the slot, and the next request passes; at the end
// no key is in flight and the in-flight gauge is back at 0.
func TestEpollSlotHeldUntilClientGoes(t *testing.T) {
	up, holds := epollEcho(t)
	p, err := limit.NewPolicy(limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(p)
	es, err := NewEpollServer(&Handler{Policy: p, Metrics: m, Next: NewProxy(mustURL(t, up.URL), ProxyOptions{UpstreamKeepAlive: 4})}, ServerOptions{}, 2)
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(startProxyServer(t, es), "http://")

	holder, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(holder, "GET /hold HTTP/1.1\r\nHost: site1\r\nX-Id: a\r\n\r\n")
	if id := <-holds.held; id != "a" {
		t.Fatalf("step 1: the upstream holds %q, want a", id)
	}
	if got := p.Busiest(5); len(got) != 1 || got[0].InFlight != 1 {
		t.Errorf("step 1: keys in flight %v, want site1 once", got)
	}
	rejected := closedExchange(t, addr, "GET /ok HTTP/1.1\r\nHost: site1\r\nConnection: close\r\n\r\n")
	want := "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\n" +
		"X-Stampede-Limit: limit_conn[0] $host\r\nDate: -\r\nContent-Length: 58\r\nConnection: close\r\n\r\n" +
		"503 Service Unavailable: limit_conn[0] $host\n"
	if !strings.HasPrefix(rejected, "HTTP/1.1 503 ") || !strings.Contains(rejected, "X-Stampede-Limit: limit_conn[0] $host\r\n") {
		t.Errorf("step 2: a second request for site1 answered\n%q\nwant like\n%q", rejected, want)
	}
	holder.Close()
	select {
	case id := <-holds.gone:
		if id != "a" {
			t.Errorf("step 3: the upstream saw %q go, want a", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("step 3: the holder's upstream connection was not closed after its client hung up")
	}
	if got := closedExchange(t, addr, "GET /ok HTTP/1.1\r\nHost: site1\r\nConnection: close\r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 200 ") {
		t.Errorf("step 4: after the holder left, a request for site1 answered %q, want 200", got)
	}
	if got := p.Busiest(5); len(got) != 0 {
		t.Errorf("step 5: keys still in flight %v", got)
	}
	if got := metricValue(t, m, "stampede_limit_in_flight", "limit_conn[0]"); got != 0 {
		t.Errorf("step 5: in-flight gauge %v, want 0", got)
	}
}

// TestEpollFaultsReleaseEverything is TestFaultsReleaseEverything through
// the epoll server: thousands of requests while clients give up at random
// (the loops see them go), the upstream kills connections, hangs past the
// read timeout before its headers or in the body, or panics; /slow is a
// location whose limit_req delays, handed off. Afterwards no key is in
// flight and no in-flight gauge is off zero.
func TestEpollFaultsReleaseEverything(t *testing.T) {
	const (
		requests    = 3000
		concurrency = 32
	)
	quiet := log.New(io.Discard, "", 0)
	upstream := faultyUpstream(t)

	cfg := limit.Config{
		Req: []limit.ReqSpec{{Key: "$host", Rate: "2000r/s", Burst: 40, NoDelay: true}},
		Conn: []limit.ConnSpec{
			{Key: "$host", PerKey: 3},
			{Key: "$binary_remote_addr", PerKey: 20, Status: 429},
			{Key: "$http_x_tenant", PerKey: 1, DryRun: true},
		},
		Locations: []limit.Location{{Paths: []string{"/slow"}, Req: []limit.ReqSpec{{Key: "$host", Rate: "2000r/s", Burst: 40, Delay: 10}}}},
	}
	p, err := limit.NewPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(p)
	proxy := NewProxy(mustURL(t, upstream.URL), ProxyOptions{ReadTimeout: 20 * time.Millisecond, UpstreamKeepAlive: 8})
	es, err := NewEpollServer(&Handler{Policy: p, Next: proxy, Metrics: m}, ServerOptions{ErrorLog: quiet, WatchDelay: ProxyWatchDelay}, 2)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := ListenReusePort("127.0.0.1:0", ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, es, ln, 5*time.Second) }()
	base := "http://" + ln.Addr().String()

	paths := []string{"/", "/fast", "/fast", "/slow", "/kill", "/hang", "/stall", "/panic", "/chunked"}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrency}}
	defer client.CloseIdleConnections()
	tl := hammer(client, base, paths, requests, concurrency)
	client.CloseIdleConnections()
	stop()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}

	t.Logf("statuses %v, client errors %d; %d served in the loops, %d connections handed off, %d answers streamed",
		tl.statuses, tl.errors, es.lean.Load(), es.handed.Load(), es.streamed.Load())
	tl.exercised(t, requests)
	if es.lean.Load() == 0 || es.handed.Load() == 0 || es.streamed.Load() == 0 {
		t.Errorf("%d served in the loops, %d handed off, %d streamed: want some of each", es.lean.Load(), es.handed.Load(), es.streamed.Load())
	}
	allReleased(t, p, m)
	if n := es.InUse(); n != 0 {
		t.Errorf("%d client connections still counted after the server stopped", n)
	}
}

// TestEpollShutdown shuts the epoll server down while a loop has a
// request upstream and an idle keep-alive client: the idle client is
// closed, the request in flight is answered (saying Connection: close),
// and Shutdown returns once it is.
func TestEpollShutdown(t *testing.T) {
	up, holds := epollEcho(t)
	es, err := NewEpollServer(&Handler{Next: NewProxy(mustURL(t, up.URL), ProxyOptions{UpstreamKeepAlive: 4})}, ServerOptions{}, 2)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := ListenReusePort("127.0.0.1:0", ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() { served <- es.Serve(ln) }()
	addr := ln.Addr().String()

	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	io.WriteString(idle, "GET /ok HTTP/1.1\r\nHost: site1\r\n\r\n")
	br := bufio.NewReader(idle)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("step 1: the idle client's first request: %v %v", resp, err)
	} else {
		io.Copy(io.Discard, resp.Body)
	}
	busy, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	io.WriteString(busy, "GET /hold HTTP/1.1\r\nHost: site1\r\nX-Id: b\r\n\r\n")
	<-holds.held

	shut := make(chan error, 1)
	go func() { shut <- es.Shutdown(context.Background()) }()
	idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("step 2: the idle client read %d bytes, %v; want its connection closed", n, err)
	}
	close(holds.release)
	busy.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatalf("step 3: the request in flight: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 || !resp.Close {
		t.Errorf("step 3: the request in flight answered %d, Close %v; want 200 and Connection: close", resp.StatusCode, resp.Close)
	}
	if err := <-shut; err != nil {
		t.Errorf("step 4: Shutdown: %v", err)
	}
	if err := <-served; err != http.ErrServerClosed {
		t.Errorf("step 4: Serve returned %v, want http.ErrServerClosed", err)
	}
}
