package limiterproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// kaUpstream is an HTTP/1.1 upstream scripted by path, which counts the
// connections it is opened and the requests it sees:
//
//	/ok      200 with a length, the connection kept
//	/close   200 with "Connection: close", then closes
//	/flaky   200 on a connection's first request; on a later one it
//	         closes without a byte, as a worker killed mid-request
//	/drop    closes without a byte
//	/chatty  200, and bytes after its body that nobody asked for
//	/hold    waits for release, then answers as /ok
//
// It closes its idle connections on closeIdle, as an upstream's own
// keep-alive timeout does.
type kaUpstream struct {
	ln      net.Listener
	release chan struct{}

	mu     sync.Mutex
	opened int
	open   map[net.Conn]bool // true while idle: waiting for a request
	seen   map[string]int    // requests by method and path
	held   int               // requests waiting in /hold
	wg     sync.WaitGroup
}

func startKAUpstream(t testing.TB) *kaUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &kaUpstream{ln: ln, release: make(chan struct{}), open: map[net.Conn]bool{}, seen: map[string]int{}}
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.mu.Lock()
			u.opened++
			u.open[c] = true
			u.mu.Unlock()
			u.wg.Add(1)
			go u.serve(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		u.mu.Lock()
		for c := range u.open {
			c.Close()
		}
		u.mu.Unlock()
		u.wg.Wait()
	})
	return u
}

func (u *kaUpstream) addr() string { return u.ln.Addr().String() }

func (u *kaUpstream) serve(c net.Conn) {
	defer u.wg.Done()
	defer func() {
		u.mu.Lock()
		delete(u.open, c)
		u.mu.Unlock()
		c.Close()
	}()
	br := bufio.NewReader(c)
	for n := 0; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body) //nolint:errcheck
		u.mu.Lock()
		u.open[c] = false
		u.seen[req.Method+" "+req.URL.Path]++
		u.mu.Unlock()
		const ok = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Type: text/plain\r\n\r\nok\n"
		switch req.URL.Path {
		case "/close":
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n") //nolint:errcheck
			return
		case "/flaky":
			if n > 0 {
				return
			}
		case "/drop":
			return
		case "/chatty":
			io.WriteString(c, ok+"HTTP/1.1 200 OK\r\n") //nolint:errcheck
			continue
		case "/hold":
			u.mu.Lock()
			u.held++
			u.mu.Unlock()
			<-u.release
		}
		// Idle from now: closeIdle runs once the answer is in.
		u.mu.Lock()
		u.open[c] = true
		u.mu.Unlock()
		if _, err := io.WriteString(c, ok); err != nil {
			return
		}
	}
}

// closeIdle closes the connections waiting for a request and returns how
// many.
func (u *kaUpstream) closeIdle() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for c, idle := range u.open {
		if idle {
			c.Close()
			n++
		}
	}
	return n
}

// stats returns the connections opened so far, those open now, and the
// requests seen of "METHOD /path".
func (u *kaUpstream) stats(what string) (opened, open, seen int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.opened, len(u.open), u.seen[what]
}

// waitOpen waits until the upstream has want connections open: the
// proxy closes the ones beyond its bound after the responses are out.
func (u *kaUpstream) waitOpen(t testing.TB, want int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, open, _ := u.stats("")
		if open == want || time.Now().After(deadline) {
			return open
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitHeld waits until n requests wait in /hold.
func (u *kaUpstream) waitHeld(t testing.TB, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		u.mu.Lock()
		held := u.held
		u.mu.Unlock()
		if held >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests reached /hold within 10 s", held, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// kaSend sends method path to the proxy at base on a connection of its
// own and returns the status, 0 for a transport error.
func kaSend(t testing.TB, base, method, path string) int {
	t.Helper()
	req, err := http.NewRequest(method, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "site1"
	cl := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	resp, err := cl.Do(req)
	if err != nil {
		t.Logf("%s %s: %v", method, path, err)
		return 0
	}
	io.Copy(io.Discard, resp.Body) //nolint:errcheck
	resp.Body.Close()
	return resp.StatusCode
}

// kaObservation is what a keep-alive scenario leaves at the upstream.
type kaObservation struct {
	statuses []int
	opened   int // connections the upstream was opened
	open     int // connections open at the end
	seen     int // requests the upstream saw of the scenario's path
}

func (o kaObservation) String() string {
	return fmt.Sprintf("statuses %v, %d connections opened, %d open at the end, the path seen %d times", o.statuses, o.opened, o.open, o.seen)
}

// kaScenario is a sequence of requests through a proxy with keepalive
// n, and what it must leave at the upstream.
type kaScenario struct {
	name string
	n    int
	// play sends the requests through the proxy at base; it returns the
	// statuses and the "METHOD /path" whose count is observed.
	play func(t testing.TB, u *kaUpstream, base string) ([]int, string)
	// open is the connections that stay open at the end.
	want kaObservation
}

func kaSeq(method, path string, times int) func(testing.TB, *kaUpstream, string) ([]int, string) {
	req := method + " " + path
	return kaSends(req, slices.Repeat([]string{req}, times)...)
}

// kaSends plays reqs ("GET /ok") one after another and observes the
// request observe.
func kaSends(observe string, reqs ...string) func(testing.TB, *kaUpstream, string) ([]int, string) {
	return func(t testing.TB, u *kaUpstream, base string) ([]int, string) {
		var st []int
		for _, r := range reqs {
			method, path, _ := strings.Cut(r, " ")
			st = append(st, kaSend(t, base, method, path))
		}
		return st, observe
	}
}

// kaAfterIdleClosed plays GET /ok, has the upstream close the connection
// the proxy keeps idle, and then plays method /ok, which it observes; with
// settled, only once the proxy's end of that connection has gone too.
func kaAfterIdleClosed(method string, settled bool) func(testing.TB, *kaUpstream, string) ([]int, string) {
	return func(t testing.TB, u *kaUpstream, base string) ([]int, string) {
		st := []int{kaSend(t, base, "GET", "/ok")}
		u.waitOpen(t, 1)
		if n := u.closeIdle(); n != 1 {
			t.Errorf("the upstream closed %d idle connections, want 1", n)
		}
		if settled {
			u.waitOpen(t, 0)
		}
		st = append(st, kaSend(t, base, method, "/ok"))
		return st, method + " /ok"
	}
}

var kaScenarios = []kaScenario{
	// Keep-alive off, nginx's default: a connection per request.
	{"off", 0, kaSeq("GET", "/ok", 5), kaObservation{[]int{200, 200, 200, 200, 200}, 5, 0, 5}},
	// One connection serves a sequence of requests.
	{"sequence", 2, kaSeq("GET", "/ok", 5), kaObservation{[]int{200, 200, 200, 200, 200}, 1, 1, 5}},
	// A response with "Connection: close" is not reused.
	{"connection-close", 2, kaSeq("GET", "/close", 3), kaObservation{[]int{200, 200, 200}, 3, 0, 3}},
	// Four requests at once open four connections; after them the
	// proxy keeps two idle and closes the others; two more requests take
	// the two kept.
	{"beyond-n", 2, func(t testing.TB, u *kaUpstream, base string) ([]int, string) {
		st := make([]int, 4)
		var wg sync.WaitGroup
		for i := range st {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st[i] = kaSend(t, base, "GET", "/hold")
			}()
		}
		u.waitHeld(t, len(st))
		close(u.release)
		wg.Wait()
		if open := u.waitOpen(t, 2); open != 2 {
			t.Errorf("after 4 requests at once with keepalive 2: %d upstream connections open, want 2", open)
		}
		st = append(st, kaSend(t, base, "GET", "/ok"), kaSend(t, base, "GET", "/ok"))
		return st, "GET /hold"
	}, kaObservation{[]int{200, 200, 200, 200, 200, 200}, 4, 2, 4}},
	// The upstream closes the idle kept connection: the next request
	// goes on a new one, unharmed.
	{"upstream-closes-idle", 2, kaAfterIdleClosed("GET", false), kaObservation{[]int{200, 200}, 2, 1, 2}},
	// The same with a POST, which would not go again: the closed idle
	// connection must not be taken at all.
	{"upstream-closes-idle-post", 2, kaAfterIdleClosed("POST", true), kaObservation{[]int{200, 200}, 2, 1, 1}},
	// An upstream that sends more than the response: its connection is
	// not reused.
	{"more-than-asked", 2, kaSends("GET /chatty", "GET /chatty", "GET /ok"), kaObservation{[]int{200, 200}, 2, 1, 1}},
	// A reused connection dropped before any response byte: a GET goes
	// again on a new connection, as nginx's proxy_next_upstream does.
	{"reused-dropped-get", 2, kaSends("GET /flaky", "GET /ok", "GET /flaky"), kaObservation{[]int{200, 200}, 2, 1, 2}},
	// ... but a POST is not sent twice: 502.
	{"reused-dropped-post", 2, kaSends("POST /flaky", "GET /ok", "POST /flaky"), kaObservation{[]int{200, 502}, 1, 0, 1}},
	// A GET dropped on a reused connection, then on the new one it went
	// again on: 502, the request seen twice; a new connection's failure
	// is not retried.
	{"dropped-twice", 2, kaSends("GET /drop", "GET /ok", "GET /drop"), kaObservation{[]int{200, 502}, 2, 0, 2}},
	// A new connection dropped: 502 at once, seen once.
	{"fresh-dropped", 2, kaSeq("GET", "/drop", 1), kaObservation{[]int{502}, 1, 0, 1}},
}

// TestKeepAlive plays every keep-alive scenario through NewProxy; the
// same scenarios through real nginx are in TestKeepAliveNginx.
func TestKeepAlive(t *testing.T) {
	for _, front := range kaFronts {
		for _, sc := range kaScenarios {
			t.Run(front.name+"/"+sc.name, func(t *testing.T) {
				if why := front.skip[sc.name]; why != "" {
					t.Skip(why)
				}
				u := startKAUpstream(t)
				base := front.start(t, NewProxy(mustURL(t, "http://"+u.addr()), ProxyOptions{UpstreamKeepAlive: sc.n, ReadTimeout: 10 * time.Second}))
				got := playKA(t, sc, u, base)
				if got.String() != sc.want.String() {
					t.Errorf("stampede: %v\nwant       %v", got, sc.want)
				}
			})
		}
	}
}

// kaFront is a server in front of the Proxy in the keep-alive tests.
type kaFront struct {
	name  string
	start func(t testing.TB, p *Proxy) string
	// skip gives the scenarios the server does not play as nginx with
	// one worker does, and why.
	skip map[string]string
}

// kaFronts are the servers the keep-alive tests put in front of the
// Proxy: each starts one serving p until the test ends and returns its
// base URL.
var kaFronts = []kaFront{
	{name: "h1", start: func(t testing.TB, p *Proxy) string {
		front := httptest.NewServer(p)
		t.Cleanup(front.Close)
		return front.URL
	}},
}

func playKA(t testing.TB, sc kaScenario, u *kaUpstream, base string) kaObservation {
	st, what := sc.play(t, u, base)
	want := sc.want.open
	open := u.waitOpen(t, want)
	opened, _, seen := u.stats(what)
	return kaObservation{statuses: st, opened: opened, open: open, seen: seen}
}

// TestKeepAliveNextUpstreamOff checks that with NextUpstreamOff a reused
// connection the upstream drops (a killed worker) answers 502 once, and is
// not sent again.
func TestKeepAliveNextUpstreamOff(t *testing.T) {
	for _, front := range kaFronts {
		t.Run(front.name, func(t *testing.T) {
			u := startKAUpstream(t)
			base := front.start(t, NewProxy(mustURL(t, "http://"+u.addr()), ProxyOptions{UpstreamKeepAlive: 4, NextUpstreamOff: true}))
			got := []int{kaSend(t, base, "GET", "/ok"), kaSend(t, base, "GET", "/flaky"), kaSend(t, base, "GET", "/ok")}
			if want := []int{200, 502, 200}; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("statuses %v, want %v", got, want)
			}
			if _, _, seen := u.stats("GET /flaky"); seen != 1 {
				t.Errorf("the upstream saw GET /flaky %d times, want 1", seen)
			}
		})
	}
}

// TestKeepAliveRequests checks keepalive_requests: a connection that
// served its share of requests closes after the last.
func TestKeepAliveRequests(t *testing.T) {
	for _, front := range kaFronts {
		t.Run(front.name, func(t *testing.T) {
			u := startKAUpstream(t)
			rp := NewProxy(mustURL(t, "http://"+u.addr()), ProxyOptions{UpstreamKeepAlive: 4})
			rp.Transport.(*upstreamTransport).pool.maxRequests = 3
			base := front.start(t, rp)
			for i := range 7 {
				if st := kaSend(t, base, "GET", "/ok"); st != 200 {
					t.Fatalf("step %d: status %d, want 200", i, st)
				}
			}
			if opened, _, _ := u.stats(""); opened != 3 {
				t.Errorf("7 requests, 3 a connection: %d connections opened, want 3", opened)
			}
		})
	}
}

// TestIdlePool runs the pool's bound and its idle timeout in virtual time:
// the least recently used connection closes when the pool is full, the
// most recently used is taken first, and a connection idle for
// keepalive_timeout closes on its own.
func TestIdlePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newIdlePool(2)
		conns := make([]*upConn, 3)
		peers := make([]net.Conn, 3)
		for i := range conns {
			a, b := net.Pipe()
			conns[i], peers[i] = &upConn{Conn: a}, b
			defer b.Close()
		}
		closed := func(i int) bool {
			peers[i].SetReadDeadline(time.Now().Add(time.Millisecond))
			_, err := peers[i].Read(make([]byte, 1))
			return err == io.EOF
		}
		p.put(conns[0])
		time.Sleep(time.Second)
		p.put(conns[1])
		p.put(conns[2]) // full: conns[0] goes
		if !closed(0) || p.idle() != 2 {
			t.Fatalf("step 1: third put into a pool of 2: the oldest closed %v, %d idle; want true, 2", closed(0), p.idle())
		}
		if c := p.get(); c != conns[2] {
			t.Errorf("step 2: get took connection %p, want the most recent %p", c, conns[2])
		}
		time.Sleep(10 * time.Second)
		p.put(conns[2]) // idle from 11 s; conns[1] from 1 s
		time.Sleep(keepaliveTimeout - 11*time.Second)
		synctest.Wait()
		if p.idle() != 2 {
			t.Errorf("step 3: %d idle at %v, want 2", p.idle(), keepaliveTimeout)
		}
		time.Sleep(time.Second + time.Millisecond) // conns[1]'s timeout
		synctest.Wait()
		if p.idle() != 1 || !closed(1) || closed(2) {
			t.Errorf("step 4: at conns[1]'s timeout: %d idle, [1] closed %v, [2] closed %v; want 1, true, false", p.idle(), closed(1), closed(2))
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if p.idle() != 0 || !closed(2) {
			t.Errorf("step 5: after the timeout of all: %d idle, [2] closed %v; want 0, true", p.idle(), closed(2))
		}
		if c := p.get(); c != nil {
			t.Errorf("step 6: get from an empty pool = %v, want nil", c)
		}
	})
}

// TestKeepAliveBodies checks that request and response bodies of every
// framing leave the connection reusable, and a response delimited by the
// connection's close does not.
func TestKeepAliveBodies(t *testing.T) {
	var mu sync.Mutex
	conns := map[string]bool{}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/chunked":
			w.Write(body)
			http.NewResponseController(w).Flush()
			w.Write([]byte(" more"))
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Write(body)
		}
	}))
	defer backend.Close()
	front := httptest.NewServer(NewProxy(mustURL(t, backend.URL), ProxyOptions{UpstreamKeepAlive: 4, ReadTimeout: 10 * time.Second, SendTimeout: 10 * time.Second}))
	defer front.Close()
	for i, step := range []struct{ method, path, body, want string }{
		{"POST", "/", "payload", "payload"},
		{"POST", "/chunked", "abc", "abc more"},
		{"GET", "/empty", "", ""},
		{"HEAD", "/", "", ""},
		{"GET", "/", "", ""},
	} {
		req, _ := http.NewRequest(step.method, front.URL+step.path, strings.NewReader(step.body))
		if step.body == "" {
			req.Body = nil
		}
		resp, err := front.Client().Do(req)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 || string(got) != step.want {
			t.Errorf("step %d: %s %s = %d %q, want 2xx %q", i, step.method, step.path, resp.StatusCode, got, step.want)
		}
	}
	if len(conns) != 1 {
		t.Errorf("5 requests in sequence on %d upstream connections, want 1", len(conns))
	}
}

// idle returns how many connections are idle.
func (p *idlePool) idle() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}
