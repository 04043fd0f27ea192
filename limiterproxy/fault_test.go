package limiterproxy

import (
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"stampede/limit"
)

// TestFaultsReleaseEverything sends thousands of requests through the
// handler and the proxy while clients give up at random, the upstream kills
// connections, hangs past the read timeout (before its headers, or after
// them in the body) or panics, and the handler's own Next panics; afterwards every limit_conn is back to no key in flight and
// no in-flight gauge is off zero.
func TestFaultsReleaseEverything(t *testing.T) {
	const (
		requests    = 3000
		concurrency = 32
	)
	quiet := log.New(io.Discard, "", 0)
	upstream := faultyUpstream(t)

	cfg := limit.Config{
		Req: []limit.ReqSpec{{Key: "$host", Rate: "2000r/s", Burst: 40, Delay: 10}},
		Conn: []limit.ConnSpec{
			{Key: "$host", PerKey: 3},
			{Key: "$binary_remote_addr", PerKey: 20, Status: 429},
			{Key: "$http_x_tenant", PerKey: 1, DryRun: true},
		},
	}
	p, err := limit.NewPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(p)
	proxy := NewProxy(mustURL(t, upstream.URL), ProxyOptions{ReadTimeout: 20 * time.Millisecond})
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/proxy-panic":
			panic("handler panics")
		case "/proxy-abort":
			panic(http.ErrAbortHandler)
		}
		proxy.ServeHTTP(w, r)
	})
	front := httptest.NewUnstartedServer(&Handler{Policy: p, Next: next, Metrics: m})
	front.Config.ErrorLog = quiet
	front.Start()

	paths := []string{"/", "/slow", "/slow", "/slow", "/kill", "/hang", "/stall", "/panic", "/proxy-panic", "/proxy-abort"}
	tl := hammer(front.Client(), front.URL, paths, requests, concurrency)
	front.Close() // waits for every handler to return

	t.Logf("statuses %v, client errors %d", tl.statuses, tl.errors)
	tl.exercised(t, requests)
	allReleased(t, p, m)
	// The zone is empty, not just quiet: every host takes its full limit again.
	g := newGate(16)
	p2 := &Handler{Policy: p, Next: g}
	srv := httptest.NewServer(p2)
	defer srv.Close()
	defer g.open()
	c := sendAll(srv.Client(), srv.URL, repeat("site1", 3))
	g.await(t, 3)
	g.open()
	if got := statuses(receive(t, c, 3)); got[200] != 3 {
		t.Errorf("after the faults, 3 requests for site1 gave %v, want 3×200", got)
	}
}

// faultyUpstream is an upstream of faults by path: /slow and /fast answer
// within 5 ms, /kill closes the connection unanswered, /hang never
// answers, /stall sends its headers and some of its body and never the
// rest, /chunked streams its answer, /panic panics; any other path is
// answered "ok".
func faultyUpstream(t *testing.T) *httptest.Server {
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow", "/fast":
			t := time.NewTimer(time.Duration(rand.IntN(5000)) * time.Microsecond)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done():
				return
			}
		case "/kill":
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				c.Close()
			}
			return
		case "/hang":
			<-r.Context().Done() // past the read timeout: 504
			return
		case "/stall": // headers and some of the body, then past the read timeout
			w.Header().Set("Content-Length", "100")
			io.WriteString(w, "abc")              //nolint:errcheck
			http.NewResponseController(w).Flush() //nolint:errcheck
			<-r.Context().Done()
			return
		case "/chunked":
			io.WriteString(w, "a")                //nolint:errcheck
			http.NewResponseController(w).Flush() //nolint:errcheck
			io.WriteString(w, "b")                //nolint:errcheck
			return
		case "/panic":
			panic("upstream handler panics")
		}
		io.WriteString(w, "ok") //nolint:errcheck
	}))
	up.Config.ErrorLog = log.New(io.Discard, "", 0)
	up.Start()
	t.Cleanup(up.Close)
	return up
}

// faultTally is what hammer's clients got.
type faultTally struct {
	statuses map[int]int
	errors   int
}

// hammer sends requests requests for paths (drawn at random) to base from
// concurrency clients, for six hosts, a third with an X-Tenant header, a
// quarter of them given up on within 3 ms, and tallies the answers.
func hammer(client *http.Client, base string, paths []string, requests, concurrency int) faultTally {
	var mu sync.Mutex
	tl := faultTally{statuses: map[int]int{}}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := range concurrency {
		rng := rand.New(rand.NewPCG(uint64(w), 7))
		wg.Go(func() {
			for range jobs {
				path := paths[rng.IntN(len(paths))]
				host := fmt.Sprintf("site%d", rng.IntN(6))
				ctx, cancel := context.WithCancel(context.Background())
				if rng.IntN(4) == 0 { // a client that gives up
					time.AfterFunc(time.Duration(rng.IntN(3000))*time.Microsecond, cancel)
				}
				req, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
				req.Host = host
				if rng.IntN(3) == 0 {
					req.Header.Set("X-Tenant", host)
				}
				resp, err := client.Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body) //nolint:errcheck
					resp.Body.Close()
				}
				cancel()
				mu.Lock()
				if err != nil {
					tl.errors++
				} else {
					tl.statuses[resp.StatusCode]++
				}
				mu.Unlock()
			}
		})
	}
	for i := range requests {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return tl
}

// exercised checks that the faults were met: some of each of 200, 502,
// 503 and 504, and some client errors.
func (tl faultTally) exercised(t *testing.T, requests int) {
	t.Helper()
	for _, code := range []int{200, 502, 503, 504} {
		if tl.statuses[code] == 0 {
			t.Errorf("no %d among %d requests: the faults were not exercised (%v)", code, requests, tl.statuses)
		}
	}
	if tl.errors == 0 {
		t.Errorf("no client errors: cancels and aborts were not exercised")
	}
}

// allReleased checks that every request has left p's limits: no key in a
// limit_conn zone, no in-flight gauge of m off zero, none among the
// busiest.
func allReleased(t *testing.T, p *limit.Policy, m *Metrics) {
	t.Helper()
	for i, r := range p.Conn {
		if n := r.Limiter.Len(); n != 0 {
			t.Errorf("limit_conn[%d] %s: %d keys still in the zone after every request ended", i, r.Key, n)
		}
		if got := metricValue(t, m, "stampede_limit_in_flight", limit.LimitName("limit_conn", i)); got != 0 {
			t.Errorf("limit_conn[%d] in_flight = %v after every request ended, want 0", i, got)
		}
	}
	if got := p.Busiest(100); len(got) != 0 {
		t.Errorf("Busiest after every request ended = %v, want none", got)
	}
}
