package limiterproxy

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"stampede/internal/nginxtest"
	"stampede/limit"
)

// finUpstream answers /fast at once and holds /slow until the proxy
// closes the connection it came on, or for finHold at most; it records
// what became of each X-Req-Id and counts the requests in its handler.
type finUpstream struct {
	mu      sync.Mutex
	fate    map[string]string // "arrived", then "gone" or "answered"
	active  int
	changed chan struct{}
}

// finHold bounds /slow's wait: far past any server's notice of a client's
// end (h1's watch, ProxyWatchDelay), so that a /slow answer means the
// server kept the request and its upstream connection for a client that
// had ended.
const finHold = 5 * time.Second

func (u *finUpstream) set(id, fate string, active int) {
	u.mu.Lock()
	u.fate[id] = fate
	u.active += active
	u.mu.Unlock()
	select {
	case u.changed <- struct{}{}:
	default:
	}
}

func (u *finUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("X-Req-Id")
	u.set(id, "arrived", 1)
	if strings.HasSuffix(r.URL.Path, "/slow") {
		select {
		case <-time.After(finHold):
		case <-r.Context().Done():
			u.set(id, "gone", -1)
			return
		}
	}
	io.WriteString(w, "ok")
	u.set(id, "answered", -1)
}

// startFinUpstream serves a finUpstream on loopback until the test ends.
func startFinUpstream(t *testing.T) (*finUpstream, *httptest.Server) {
	up := &finUpstream{fate: map[string]string{}, changed: make(chan struct{}, 1)}
	us := httptest.NewUnstartedServer(up)
	us.Config.ErrorLog = log.New(io.Discard, "", 0)
	us.Start()
	t.Cleanup(us.Close)
	return up, us
}

// settle waits until no request is in the upstream's handler.
func (u *finUpstream) settle(t *testing.T) {
	t.Helper()
	deadline := time.After(3 * finHold)
	for {
		u.mu.Lock()
		n := u.active
		u.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-u.changed:
		case <-deadline:
			t.Fatalf("%d requests still at the upstream", n)
		}
	}
}

func (u *finUpstream) fateOf(id string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.fate[id]
}

// finEpoll, where there is an epoll server, serves h on one loop with
// `stampede proxy`'s watch delay until the test ends and returns its base
// URL; nil elsewhere.
var finEpoll func(t *testing.T, h http.Handler) string

// finCork, where it can, corks c (TCP_CORK), so that the head and the
// FIN that follows it leave in one segment and the server hears of both
// in one event, as nginx's pending_eof at the head; nil elsewhere.
var finCork func(t *testing.T, c *net.TCPConn)

// finExchange sends a whole GET head for path and at once shuts down its
// writing side (FIN), as `printf 'GET ...' | nc -N` does, in one segment
// where finCork can, and returns all the server sent until it closed.
func finExchange(t *testing.T, addr, path, id string) []byte {
	t.Helper()
	return finExchangeAfter(t, addr, path, id, nil)
}

// finExchangeAfter is finExchange with the FIN sent once arrived, when not
// nil, says the request reached the upstream.
func finExchangeAfter(t *testing.T, addr, path, id string, arrived func() bool) []byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if finCork != nil && arrived == nil {
		finCork(t, c.(*net.TCPConn))
	}
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: site1\r\nX-Req-Id: %s\r\n\r\n", path, id); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(finHold); arrived != nil && !arrived(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached the upstream", id)
		}
		time.Sleep(time.Millisecond)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(3 * finHold))
	b, err := io.ReadAll(c)
	if err != nil && !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("%s: %v after %q", id, err, b)
	}
	return b
}

// TestConformanceFinWithHead plays a client whose end (shutdown(SHUT_WR))
// follows its GET head at once, at nginx (proxy_pass, with and without
// upstream keepalive, limit_conn 1, one worker), at `stampede proxy`'s h1
// server and at its epoll server.
//
// nginx hears the end with the head (EPOLLRDHUP: the read event's
// pending_eof) and, once it has passed the request to the upstream module,
// checks the client (ngx_http_upstream_init_request posts the read event,
// ngx_http_upstream_check_broken_connection): the request ends with 499,
// nothing written to the client, the upstream connection closed too, kept
// or not, and the limit_conn slot freed before the client connection
// closes. It does so before it can read any answer of the upstream, so
// for an upstream that answers at once too, when the FIN comes in the
// head's segment (finCork). Without the cork the FIN may come in an event
// of its own, after the upstream's answer: then nginx answers some such
// clients (4 of 100, and 1 of 100 with keepalive, in one measurement), so
// that only the /slow clients are held to nginx, and the slot's release
// after every client. A client whose FIN comes once its request is at the
// upstream (/late/slow) ends alike: nginx hears of it from an event of
// its own.
func TestConformanceFinWithHead(t *testing.T) {
	nginxtest.Require(t)
	up, us := startFinUpstream(t)
	cfg := limit.Config{Conn: []limit.ConnSpec{{Key: "$binary_remote_addr", PerKey: 1}}}
	const steps = 20
	next := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for _, ka := range []int{0, 8} {
		t.Run(fmt.Sprintf("keepalive %d", ka), func(t *testing.T) {
			targets := finTargets(t, cfg, us, ka, true, false)
			for _, target := range targets {
				addr := strings.TrimPrefix(target.base, "http://")
				served := map[string]int{}
				for _, path := range []string{"/fast", "/slow", "/late/slow"} {
					// A server that keeps /slow waits out finHold each
					// time: once is enough to tell.
					for i := 0; i < steps && served["/slow"]+served["/late/slow"] == 0; i++ {
						id := fmt.Sprintf("%d.%s%s.%d", ka, target.name, path, i)
						var arrived func() bool
						if path == "/late/slow" {
							// The FIN once the request is at the upstream:
							// nginx hears of it from an event of its own.
							arrived = func() bool { return up.fateOf(id) != "" }
						}
						got := finExchangeAfter(t, addr, path, id, arrived)
						if len(got) > 0 {
							served[path]++
							if path != "/fast" || finCork != nil {
								t.Errorf("%s, %s: answered %q to a client that had ended; nginx closes without a response", target.name, id, firstLine(got))
							}
						}
						// The client saw the close: its slot is free.
						resp, err := next.Get(target.base + "/fast")
						if err != nil {
							t.Fatalf("%s, after %s: %v", target.name, id, err)
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != http.StatusOK {
							t.Errorf("%s, after %s: the next client got %d: the slot was not freed when the connection closed", target.name, id, resp.StatusCode)
						}
					}
				}
				up.settle(t)
				for _, path := range []string{"/slow", "/late/slow"} {
					for i := range steps {
						id := fmt.Sprintf("%d.%s%s.%d", ka, target.name, path, i)
						if f := up.fateOf(id); f == "answered" {
							t.Errorf("%s, %s: the upstream connection was kept until the upstream answered; nginx closes it", target.name, id)
						}
					}
				}
				t.Logf("%s: answered %d /fast, %d /slow and %d /late/slow of %d clients each", target.name, served["/fast"], served["/slow"], served["/late/slow"], steps)
			}
		})
	}
}

// finTarget is one server a FIN conformance test plays its clients at.
type finTarget struct{ name, base string }

// finTargets starts, until the test ends, the servers a FIN conformance
// test plays at, each with cfg's limits in front of the upstream us, with
// ka idle upstream connections kept: nginx (one worker when oneWorker, one
// pool of kept connections), `stampede proxy`'s h1 server, its net/http
// server when withNetHTTP, and its epoll server where there is one. Each
// of ours checks at the end that no key is left in flight.
func finTargets(t *testing.T, cfg limit.Config, us *httptest.Server, ka int, oneWorker, withNetHTTP bool) []finTarget {
	t.Helper()
	ours := func(start func(t *testing.T, h http.Handler) string) string {
		p, err := limit.NewPolicy(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if got := p.Busiest(10); len(got) != 0 {
				t.Errorf("keys still in flight after the run: %v", got)
			}
		})
		return start(t, &Handler{Policy: p, Next: NewProxy(mustURL(t, us.URL), ProxyOptions{UpstreamKeepAlive: ka})})
	}
	targets := []finTarget{
		{"nginx", nginxtest.Start(t, func(w io.Writer, listen string) error {
			var b strings.Builder
			if err := WriteNginx(&b, cfg, NginxOptions{Listen: listen, Upstream: us.Listener.Addr().String(), UpstreamKeepAlive: ka}); err != nil {
				return err
			}
			conf := b.String()
			if oneWorker {
				conf = strings.Replace(conf, "worker_processes auto;", "worker_processes 1;", 1)
			}
			_, err := io.WriteString(w, conf)
			return err
		})},
		{"h1", ours(func(t *testing.T, h http.Handler) string {
			return startFinServer(t, NewLeanServer(h, ServerOptions{WatchDelay: ProxyWatchDelay}))
		})},
	}
	if withNetHTTP {
		targets = append(targets, finTarget{"net/http", ours(func(t *testing.T, h http.Handler) string {
			return startFinServer(t, NewServer(h, ServerOptions{}))
		})})
	}
	if finEpoll != nil {
		targets = append(targets, finTarget{"epoll", ours(finEpoll)})
	}
	return targets
}

// startFinServer serves srv on a loopback port until the test ends and
// returns its base URL.
func startFinServer(t *testing.T, srv server) string {
	t.Helper()
	ln, err := Listen("127.0.0.1:0", ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return serveUntilEnd(t, srv, ln)
}

// serveUntilEnd serves srv on ln until the test ends and returns its base URL.
func serveUntilEnd(t testing.TB, srv server, ln net.Listener) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, srv, ln, 5*time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		ln.Close()
	})
	return "http://" + ln.Addr().String()
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\r\n")
	return s
}

// TestConformanceFinDuringDelay plays clients that end their side
// (shutdown(SHUT_WR)) while limit_req delays their request (rate=1r/m
// burst=1: the second request of a key waits 60 s), at nginx, at `stampede
// proxy`'s h1 server and at its epoll server (which hands such a location
// to its h1 server), and clients that end theirs with a request a limit
// rejects: limit_req over its burst, and limit_conn in a location whose
// limit_req cannot delay, which the epoll server answers on its loop.
//
// Measured on nginx: a client whose FIN comes with its head (finCork), or
// while it waits, gets nothing, the request is logged 499 at once and
// never reaches the upstream (the delay's read handler,
// ngx_http_test_reading, finalizes it); a rejected one gets its 503 all
// the same, as nginx rejects before it looks at the client again.
func TestConformanceFinDuringDelay(t *testing.T) {
	nginxtest.Require(t)
	up, us := startFinUpstream(t)
	cfg := limit.Config{
		Req: []limit.ReqSpec{{Key: "$arg_r", Rate: "1r/m", Burst: 1}},
		Locations: []limit.Location{{
			Paths: []string{"/c/"},
			Req:   []limit.ReqSpec{{Key: "$arg_x", Rate: "1r/s"}}, // cannot delay
			Conn:  []limit.ConnSpec{{Key: "$arg_c", PerKey: 1}},
		}},
	}
	targets := finTargets(t, cfg, us, 0, false, false)
	get := func(t *testing.T, url string, want int) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", url, resp.StatusCode, want)
		}
	}
	// waiting sends the FIN a while after the head, in an event of its
	// own, well within the 60 s delay.
	waiting := func() bool { time.Sleep(20 * time.Millisecond); return true }
	for _, target := range targets {
		t.Run(target.name, func(t *testing.T) {
			addr := strings.TrimPrefix(target.base, "http://")
			for _, late := range []bool{false, true} {
				k := fmt.Sprintf("%s.%v", target.name, late)
				var fin func() bool
				if late {
					fin = waiting
				}
				get(t, target.base+"/fast?r="+k, http.StatusOK)
				id := k + ".delayed"
				if got := finExchangeAfter(t, addr, "/fast?r="+k, id, fin); len(got) > 0 {
					t.Errorf("%s: answered %q to a client that ended during its delay; nginx closes without a response", id, firstLine(got))
				}
				// The delayed request still counts against the burst.
				id = k + ".rejected"
				got := finExchangeAfter(t, addr, "/fast?r="+k, id, fin)
				if statusOf(got) != "503" {
					t.Errorf("%s: answered %q over the burst; nginx answers its 503", id, firstLine(got))
				}
			}
			// limit_conn: a held slot, then a client that ends its side
			// with its request.
			k := target.name
			hold, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(hold, "GET /c/slow?c=%s HTTP/1.1\r\nHost: site1\r\nX-Req-Id: %s.hold\r\n\r\n", k, k)
			for deadline := time.Now().Add(finHold); up.fateOf(k+".hold") == ""; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%s.hold never reached the upstream", k)
				}
			}
			if got := finExchange(t, addr, "/c/fast?c="+k, k+".conn"); statusOf(got) != "503" {
				t.Errorf("%s.conn: answered %q beside a held slot; nginx answers its 503", k, firstLine(got))
			}
			hold.Close()
			up.settle(t)
			for _, id := range []string{k + ".false.delayed", k + ".true.delayed", k + ".false.rejected", k + ".true.rejected", k + ".conn"} {
				if f := up.fateOf(id); f != "" {
					t.Errorf("%s reached the upstream (%s); nginx never passes it on", id, f)
				}
			}
			if f := up.fateOf(k + ".hold"); f != "gone" {
				t.Errorf("%s.hold: %q at the upstream, want gone once its client closed", k, f)
			}
		})
	}
}

// statusOf returns the status code of the response b begins with, "" for
// none: nginx's reason phrases are its own.
func statusOf(b []byte) string {
	if f := strings.Fields(firstLine(b)); len(f) > 1 && strings.HasPrefix(f[0], "HTTP/") {
		return f[1]
	}
	return ""
}

// TestConformanceFinAfterPipelined plays clients that send two or three
// pipelined GET heads and end their side in the same segment (finCork),
// at nginx, at `stampede proxy`'s h1 and net/http servers and at its epoll
// server. Measured on nginx: no answer to any of them, and none reaches
// the upstream, as for one head (TestConformanceFinWithHead).
func TestConformanceFinAfterPipelined(t *testing.T) {
	nginxtest.Require(t)
	if finCork == nil {
		t.Skip("no TCP_CORK here: the heads and the FIN cannot be sent in one segment")
	}
	up, us := startFinUpstream(t)
	cfg := limit.Config{Conn: []limit.ConnSpec{{Key: "$binary_remote_addr", PerKey: 4}}}
	targets := finTargets(t, cfg, us, 0, true, true)
	for _, seq := range [][]string{{"/fast", "/fast"}, {"/fast", "/slow"}, {"/slow", "/fast"}, {"/fast", "/fast", "/fast"}} {
		for _, target := range targets {
			c, err := net.Dial("tcp", strings.TrimPrefix(target.base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			finCork(t, c.(*net.TCPConn))
			var heads strings.Builder
			var ids []string
			for i, path := range seq {
				id := fmt.Sprintf("pipelined.%s.%d%s", target.name, i, path)
				ids = append(ids, id)
				fmt.Fprintf(&heads, "GET %s HTTP/1.1\r\nHost: site1\r\nX-Req-Id: %s\r\n\r\n", path, id)
			}
			if _, err := io.WriteString(c, heads.String()); err != nil {
				t.Fatal(err)
			}
			if err := c.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(3 * finHold))
			got, err := io.ReadAll(c)
			c.Close()
			if err != nil && !strings.Contains(err.Error(), "connection reset") {
				t.Fatalf("%s, %v: %v after %q", target.name, seq, err, got)
			}
			if len(got) > 0 {
				t.Errorf("%s, %v: answered %q to a client that had ended; nginx closes without a response", target.name, seq, firstLine(got))
			}
			up.settle(t)
			for _, id := range ids {
				if f := up.fateOf(id); f != "" {
					t.Errorf("%s: %s reached the upstream (%s); nginx ends it first", target.name, id, f)
				}
			}
		}
	}
}
