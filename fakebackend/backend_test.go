package fakebackend

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"stampede/workerpool"
)

// call is one request served by ServeHTTP on its own goroutine, as
// http.Server would.
type call struct {
	path    string
	rec     *httptest.ResponseRecorder
	cancel  context.CancelFunc // the client goes away
	begin   time.Time
	end     time.Time // when ServeHTTP returned or panicked
	aborted bool      // ServeHTTP panicked with http.ErrAbortHandler
	done    chan struct{}
}

// serve starts a request for path. In a synctest bubble it then waits until
// the handler is blocked, so that calls arrive in the order they are made.
func serve(t *testing.T, b *Backend, path string) *call {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, path, nil)
	c := &call{path: path, rec: httptest.NewRecorder(), cancel: cancel, begin: time.Now(), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer func() {
			c.end = time.Now()
			if v := recover(); v != nil {
				if v != http.ErrAbortHandler {
					t.Errorf("%s: ServeHTTP panicked: %v", path, v)
				}
				c.aborted = true
			}
		}()
		b.ServeHTTP(c.rec, r)
	}()
	synctest.Wait()
	return c
}

// took returns how long the call took, after waiting for it to end.
func (c *call) took() time.Duration {
	<-c.done
	return c.end.Sub(c.begin)
}

// servedIn checks that c was answered 200 after want of wall time; what
// names the request in the failure.
func (c *call) servedIn(t *testing.T, what string, want time.Duration) {
	t.Helper()
	if got := c.took(); got != want || c.aborted || c.rec.Code != http.StatusOK {
		t.Errorf("%s took %v aborted %v status %d, want %v and 200", what, got, c.aborted, c.rec.Code, want)
	}
}

// ended reports whether the call has returned.
func (c *call) ended() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func mustNew(t *testing.T, opts Options) *Backend {
	t.Helper()
	b, err := New(opts)
	if err != nil {
		t.Fatalf("New(%+v): %v", opts, err)
	}
	return b
}

func checkBusy(t *testing.T, step string, b *Backend, busy, queued int) {
	t.Helper()
	s := b.Stats()
	if s.Busy != busy || s.Queued != queued {
		t.Errorf("%s: got busy %d queued %d, want busy %d queued %d", step, s.Busy, s.Queued, busy, queued)
	}
}

func TestBackendQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Options{Pool: workerpool.Config{Workers: 8}, Routes: []Route{{Name: "report", Path: "/report", Service: workerpool.Constant{D: 2 * time.Minute}}}})
		var calls []*call
		for range 10 {
			calls = append(calls, serve(t, b, "/report?item=x"))
		}
		checkBusy(t, "step 0: after 10 arrivals", b, 8, 2)
		for i, c := range calls {
			want := 2 * time.Minute
			if i >= 8 {
				want = 4 * time.Minute
			}
			if got := c.took(); got != want {
				t.Errorf("step %d: request %d took %v, want %v", i+1, i, got, want)
			}
			if c.aborted || c.rec.Code != http.StatusOK {
				t.Errorf("step %d: request %d: aborted %v status %d, want 200", i+1, i, c.aborted, c.rec.Code)
			}
			h := c.rec.Header()
			if h.Get("Connection") != "close" || h.Get(HeaderService) != "2m" || h.Get(HeaderRoute) != "report" {
				t.Errorf("step %d: request %d headers %v, want Connection: close, %s: 2m, %s: report", i+1, i, h, HeaderService, HeaderRoute)
			}
			if got, want := c.rec.Body.String(), "report: served in 2m\n"; got != want {
				t.Errorf("step %d: request %d body %q, want %q", i+1, i, got, want)
			}
		}
		s := b.Snapshot()
		want := workerpool.Stats{Workers: 8, Threads: 1, Backlog: workerpool.DefaultBacklog, BusyMax: 8, QueueMax: 2, Arrived: 10, Served: 10, BusyTime: 20 * time.Minute}
		if s.Stats != want {
			t.Errorf("Stats = %+v, want %+v", s.Stats, want)
		}
		if s.Elapsed != 4*time.Minute || s.Utilization != 20.0/32 {
			t.Errorf("elapsed %v utilization %v, want 4m and %v", s.Elapsed, s.Utilization, 20.0/32)
		}
	})
}

func TestBackendBacklogFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// listen(2) backlog 1: the accept queue holds 2.
		b := mustNew(t, Options{Pool: workerpool.Config{Workers: 2, Backlog: 1, Overflow: workerpool.Reset}, Routes: []Route{{Path: "/", Service: workerpool.Constant{D: time.Second}}}})
		calls := []*call{serve(t, b, "/a"), serve(t, b, "/b"), serve(t, b, "/c"), serve(t, b, "/d"), serve(t, b, "/e")}
		// The fifth finds both workers busy and the backlog full: its
		// connection is refused at once.
		if !calls[4].ended() || !calls[4].aborted || calls[4].took() != 0 {
			t.Errorf("step 1: 5th request: ended %v aborted %v, want dropped at once", calls[4].ended(), calls[4].aborted)
		}
		if calls[4].rec.Body.Len() != 0 {
			t.Errorf("step 1: 5th request wrote %q, want nothing", calls[4].rec.Body)
		}
		for i, want := range []time.Duration{time.Second, time.Second, 2 * time.Second, 2 * time.Second} {
			if got := calls[i].took(); got != want || calls[i].aborted {
				t.Errorf("step %d: request %d took %v aborted %v, want %v and a response", i+2, i, got, calls[i].aborted, want)
			}
		}
		s := b.Snapshot()
		if s.Refused != 1 || s.Served != 4 || s.Routes[0].Refused != 1 || s.Routes[0].Arrived != 5 {
			t.Errorf("stats: refused %d served %d, route %+v; want 1, 4, 5 arrived 1 refused", s.Refused, s.Served, s.Routes[0])
		}
	})
}

// TestBackendBacklogDrop checks the kernel's default on a full backlog, as
// a handler behind no gate emulates it: the connection waits on the SYN
// schedule, in model time, until it fits.
func TestBackendBacklogDrop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Options{Pool: workerpool.Config{Workers: 1, Backlog: -1}, TimeScale: 0.5, Routes: []Route{{Path: "/", Service: workerpool.Constant{D: 2500 * time.Millisecond}}}})
		a, c := serve(t, b, "/a"), serve(t, b, "/c")
		time.Sleep(time.Millisecond) // d's SYNs go a model 2ms after c's
		d := serve(t, b, "/d")
		// Model time: a runs 0–2.5s. c and d are dropped at 0 and sent
		// again at 1s (dropped again) and at 3s: c fits and runs 3–5.5s, d
		// is dropped a third time, and at 7s fits and runs 7–9.5s.
		for i, x := range []struct {
			c    *call
			took time.Duration
		}{{a, 2500 * time.Millisecond}, {c, 5500 * time.Millisecond}, {d, 9500 * time.Millisecond}} {
			if got := x.c.took(); got != b.clock.Scale.Wall(x.took) || x.c.aborted || x.c.rec.Code != http.StatusOK {
				t.Errorf("step %d: request took %v aborted %v status %d, want %v (model %v) and 200", i, got, x.c.aborted, x.c.rec.Code, b.clock.Scale.Wall(x.took), x.took)
			}
		}
		s := b.Stats()
		if s.SYNDrops != 5 || s.Served != 3 || s.Refused != 0 {
			t.Errorf("stats %+v: want 5 SYNs dropped, 3 served, none refused", s)
		}
	})
}

func TestBackendNoBacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Options{Pool: workerpool.Config{Workers: 1, Backlog: -1, Overflow: workerpool.Reset}, Routes: []Route{{Path: "/", Service: workerpool.Constant{D: time.Second}}}})
		a, c := serve(t, b, "/"), serve(t, b, "/")
		if !c.aborted || !c.ended() {
			t.Errorf("step 1: second request with no backlog: aborted %v, want dropped", c.aborted)
		}
		if got := a.took(); got != time.Second {
			t.Errorf("step 2: first request took %v, want 1s", got)
		}
	})
}

func TestBackendTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Options{
			Pool: workerpool.Config{Workers: 1, Timeout: 120 * time.Second},
			Routes: []Route{
				{Name: "stock", Path: "/stock", Service: workerpool.Constant{D: 4 * time.Minute}},
				{Name: "home", Path: "/", Service: workerpool.Constant{D: time.Second}},
			},
		})
		kill := tickAfter(b.pool, 120*time.Second)
		slow := serve(t, b, "/stock/balance")
		fast := serve(t, b, "/home")
		if got := slow.took(); got != kill || !slow.aborted {
			t.Errorf("step 1: slow request ended after %v aborted %v, want killed at the tick after 2m, %v", got, slow.aborted, kill)
		}
		if slow.rec.Body.Len() != 0 || slow.rec.Header().Get(HeaderService) != "" {
			t.Errorf("step 1: killed request wrote headers %v body %q, want nothing", slow.rec.Header(), slow.rec.Body)
		}
		// The worker is replaced and takes the queued request.
		if got := fast.took(); got != kill+time.Second || fast.aborted {
			t.Errorf("step 2: queued request ended after %v aborted %v, want served at %v", got, fast.aborted, kill+time.Second)
		}
		s := b.Snapshot()
		if s.Killed != 1 || s.Served != 1 || s.BusyTime != kill+time.Second {
			t.Errorf("stats: killed %d served %d busy %v, want 1, 1, %v", s.Killed, s.Served, s.BusyTime, kill+time.Second)
		}
		for _, r := range s.Routes {
			if r.Name == "stock" && r.Killed != 1 || r.Name == "home" && r.Served != 1 {
				t.Errorf("route %+v: want stock killed 1, home served 1", r)
			}
		}
	})
}

func TestBackendClientAbortContinue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Options{Pool: workerpool.Config{Workers: 1}, Routes: []Route{{Path: "/", Service: workerpool.Constant{D: 2 * time.Minute}}}})
		a := serve(t, b, "/a")
		q := serve(t, b, "/q")
		time.Sleep(30 * time.Second)
		a.cancel() // the user closes the tab: the worker does not notice
		q.cancel() // nor does the kernel, which holds the queued request
		synctest.Wait()
		if a.ended() || q.ended() {
			t.Errorf("step 1: after the clients left at 30s: running ended %v, queued ended %v; want both still going", a.ended(), q.ended())
		}
		checkBusy(t, "step 1: at 30s", b, 1, 1)
		time.Sleep(time.Minute)
		checkBusy(t, "step 2: at 1m30s", b, 1, 1)
		if got := a.took(); got != 2*time.Minute || a.aborted || a.rec.Code != 200 {
			t.Errorf("step 3: abandoned running request took %v aborted %v status %d, want 2m and a response to nobody", got, a.aborted, a.rec.Code)
		}
		if got := q.took(); got != 4*time.Minute || q.aborted {
			t.Errorf("step 4: abandoned queued request took %v aborted %v, want it run 2m..4m", got, q.aborted)
		}
		s := b.Stats()
		if s.Abandoned != 2 || s.Cancelled != 0 || s.Served != 2 || s.BusyTime != 4*time.Minute {
			t.Errorf("stats: abandoned %d cancelled %d served %d busy %v, want 2, 0, 2, 4m", s.Abandoned, s.Cancelled, s.Served, s.BusyTime)
		}
	})
}

func TestBackendClientAbortCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Options{Pool: workerpool.Config{Workers: 1, OnClientAbort: workerpool.Cancel}, Routes: []Route{{Path: "/", Service: workerpool.Constant{D: 2 * time.Minute}}}})
		a := serve(t, b, "/a")
		q1 := serve(t, b, "/q1")
		q2 := serve(t, b, "/q2")
		time.Sleep(10 * time.Second)
		q1.cancel() // leaves the backlog at once
		if got := q1.took(); got != 10*time.Second || q1.aborted || q1.rec.Body.Len() != 0 {
			t.Errorf("step 1: cancelled queued request took %v aborted %v body %q, want a silent return at 10s", got, q1.aborted, q1.rec.Body)
		}
		checkBusy(t, "step 1: at 10s", b, 1, 1)
		time.Sleep(20 * time.Second)
		a.cancel() // frees the worker, which takes q2
		if got := a.took(); got != 30*time.Second || a.rec.Body.Len() != 0 {
			t.Errorf("step 2: cancelled running request took %v body %q, want a silent return at 30s", got, a.rec.Body)
		}
		synctest.Wait()
		checkBusy(t, "step 2: at 30s", b, 1, 0)
		if got := q2.took(); got != 2*time.Minute+30*time.Second || q2.aborted {
			t.Errorf("step 3: q2 took %v aborted %v, want served at 2m30s", got, q2.aborted)
		}
		s := b.Snapshot()
		if s.Abandoned != 2 || s.Cancelled != 2 || s.Served != 1 || s.BusyTime != 2*time.Minute+30*time.Second || s.Routes[0].Cancelled != 2 {
			t.Errorf("stats %+v: want 2 abandoned and cancelled, 1 served, 2m30s busy", s)
		}
	})
}

func TestBackendRoutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Options{Routes: []Route{
			{Path: "/api", Service: workerpool.Constant{D: time.Second}},
			{Name: "slow", Path: "/api/slow", Service: workerpool.Constant{D: time.Minute}},
			{Path: "/static/", Service: workerpool.Constant{D: 0}},
		}})
		cases := []struct {
			path  string
			took  time.Duration
			code  int
			route string
		}{
			{"/api/slow/report", time.Minute, 200, "slow"},
			{"/api/slowly", time.Minute, 200, "slow"}, // plain prefix, as nginx
			{"/api/fast", time.Second, 200, "/api"},
			{"/api", time.Second, 200, "/api"},
			{"/static/app.js", 0, 200, "/static/"},
			{"/static", 0, 404, ""},
			{"/", 0, 404, ""},
		}
		for i, c := range cases {
			r := serve(t, b, c.path)
			if got := r.took(); got != c.took || r.rec.Code != c.code || r.rec.Header().Get(HeaderRoute) != c.route {
				t.Errorf("step %d: %s: took %v status %d route %q, want %v %d %q", i, c.path, got, r.rec.Code, r.rec.Header().Get(HeaderRoute), c.took, c.code, c.route)
			}
		}
		// 404s take no worker.
		if s := b.Stats(); s.Arrived != 5 {
			t.Errorf("arrived %d, want 5 (404s do not reach the pool)", s.Arrived)
		}
	})
}

func TestBackendNoRoutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Options{})
		for i, path := range []string{"/", "/anything", "/x/y?z=1"} {
			r := serve(t, b, path)
			if got := r.took(); got != 0 || r.rec.Code != 200 || r.rec.Header().Get(HeaderService) != "0s" {
				t.Errorf("step %d: %s took %v status %d service %q, want 0, 200, 0s", i, path, got, r.rec.Code, r.rec.Header().Get(HeaderService))
			}
		}
		if s := b.Stats(); s.Served != 3 || s.Arrived != 3 {
			t.Errorf("served %d arrived %d, want 3 through the pool", s.Served, s.Arrived)
		}
	})
}

func TestBackendTimeScale(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Options{
			Pool:      workerpool.Config{Workers: 1, Timeout: 120 * time.Second},
			Routes:    []Route{{Path: "/slow", Service: workerpool.Constant{D: 3 * time.Minute}}, {Path: "/", Service: workerpool.Constant{D: 2 * time.Minute}}},
			TimeScale: 0.01,
		})
		a, k := serve(t, b, "/"), serve(t, b, "/slow")
		if got := a.took(); got != 1200*time.Millisecond || a.rec.Header().Get(HeaderService) != "2m" {
			t.Errorf("step 1: 2m of work at scale 0.01 took %v (service header %q), want 1.2s and 2m", got, a.rec.Header().Get(HeaderService))
		}
		kill := tickAfter(b.pool, 4*time.Minute)
		if got := k.took(); got != b.clock.Scale.Wall(kill) || !k.aborted {
			t.Errorf("step 2: 3m of work with a 120s timeout at 0.01 ended after %v aborted %v, want killed on the tick after 4m, %v (wall %v)", got, k.aborted, kill, b.clock.Scale.Wall(kill))
		}
		// The pool keeps model time.
		s := b.Snapshot()
		if s.BusyTime != kill || (s.Elapsed-kill).Abs() > time.Microsecond {
			t.Errorf("busy time %v elapsed %v, want %v of model time", s.BusyTime, s.Elapsed, kill)
		}
	})
}

func TestBackendStatsEndpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Options{Pool: workerpool.Config{Workers: 2, Backlog: 4}, Routes: []Route{
			{Name: "slow", Path: "/slow", Service: workerpool.Constant{D: time.Minute}},
			{Name: "home", Path: "/", Service: workerpool.Constant{D: time.Second}},
		}})
		serve(t, b, "/slow")
		serve(t, b, "/slow")
		serve(t, b, "/")
		home := serve(t, b, "/")
		time.Sleep(30 * time.Second)
		// Every worker is busy, yet the stats answer at once.
		st := serve(t, b, StatsPath)
		if !st.ended() || st.rec.Code != 200 || st.rec.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("stats: ended %v status %d content type %q, want an immediate JSON 200", st.ended(), st.rec.Code, st.rec.Header().Get("Content-Type"))
		}
		var got map[string]any
		if err := json.Unmarshal(st.rec.Body.Bytes(), &got); err != nil {
			t.Fatalf("stats body %q: %v", st.rec.Body, err)
		}
		for k, want := range map[string]any{"workers": 2.0, "backlog": 4.0, "busy": 2.0, "queued": 2.0, "busy_max": 2.0,
			"queue_max": 2.0, "arrived": 4.0, "served": 0.0, "killed": 0.0, "refused": 0.0, "busy_time_ns": 60e9,
			"elapsed_ns": 30e9, "utilization": 1.0} {
			if got[k] != want {
				t.Errorf("stats %q = %v, want %v", k, got[k], want)
			}
		}
		var snap Snapshot
		json.Unmarshal(st.rec.Body.Bytes(), &snap)
		wantRoutes := []RouteStats{{Name: "home", Path: "/", Arrived: 2}, {Name: "slow", Path: "/slow", Arrived: 2}}
		if fmt.Sprint(snap.Routes) != fmt.Sprint(wantRoutes) {
			t.Errorf("routes %+v, want %+v", snap.Routes, wantRoutes)
		}
		home.took()
		synctest.Wait() // the other home request ends at the same instant
		st = serve(t, b, StatsPath)
		json.Unmarshal(st.rec.Body.Bytes(), &snap)
		if snap.Served != 4 || snap.Routes[0].Served != 2 || snap.Routes[1].Served != 2 {
			t.Errorf("after all ended: served %d, routes %+v; want 4, 2 each", snap.Served, snap.Routes)
		}

		ctx := t.Context()
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, StatsPath, nil)
		w := httptest.NewRecorder()
		b.ServeHTTP(w, r)
		if w.Code != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: status %d, want 405", StatsPath, w.Code)
		}
	})
}

// TestBackendChurn runs many requests with random client cancels under
// both policies and checks that every one ends, every worker comes back and
// the counters add up.
func TestBackendChurn(t *testing.T) {
	for _, policy := range []workerpool.AbortPolicy{workerpool.Continue, workerpool.Cancel} {
		t.Run(policy.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := mustNew(t, Options{
					Pool:   workerpool.Config{Workers: 4, Backlog: 20, Timeout: 3 * time.Second, OnClientAbort: policy},
					Routes: []Route{{Path: "/", Service: workerpool.Exp{Avg: time.Second}}},
					Seed:   7,
				})
				rng := rand.New(rand.NewPCG(7, 7))
				var calls []*call
				for range 500 {
					calls = append(calls, serve(t, b, "/"))
					if rng.IntN(3) == 0 {
						c := calls[rng.IntN(len(calls))]
						c.cancel()
					}
					time.Sleep(time.Duration(rng.Int64N(int64(300 * time.Millisecond))))
				}
				for _, c := range calls {
					<-c.done
				}
				s := b.Stats()
				if s.Busy != 0 || s.Queued != 0 {
					t.Errorf("after all ended: busy %d queued %d, want 0 and 0", s.Busy, s.Queued)
				}
				if sum := s.Served + s.Killed + s.Refused + s.Cancelled + s.GaveUp; sum != s.Arrived || s.Arrived != 500 {
					t.Errorf("served %d + killed %d + refused %d + cancelled %d + gave up %d = %d, want arrived %d = 500", s.Served, s.Killed, s.Refused, s.Cancelled, s.GaveUp, sum, s.Arrived)
				}
				if s.Killed == 0 || s.Abandoned == 0 || s.QueueMax == 0 {
					t.Errorf("stats %+v: want some killed, abandoned and queued to exercise every path", s)
				}
				if policy == workerpool.Continue && s.Cancelled != 0 || policy == workerpool.Cancel && s.Cancelled == 0 {
					t.Errorf("policy %v: cancelled %d", policy, s.Cancelled)
				}
			})
		})
	}
}

func TestNewValidates(t *testing.T) {
	dist := workerpool.Constant{D: time.Second}
	cases := []struct {
		opts Options
		want string
	}{
		{Options{Pool: workerpool.Config{Workers: -1}}, "workers: -1 is below 0"},
		{Options{Pool: workerpool.Config{Workers: workerpool.MaxWorkers + 1}}, "workers: 65537 is over 65536"},
		{Options{Pool: workerpool.Config{Backlog: workerpool.MaxBacklog + 1}}, "backlog: 1048577 is over"},
		{Options{Pool: workerpool.Config{Timeout: -time.Second}}, "timeout: -1s is negative"},
		{Options{Pool: workerpool.Config{OnClientAbort: 7}}, "on_client_abort: 7"},
		{Options{TimeScale: -1}, "time scale -1"},
		{Options{Routes: []Route{{Path: "slow", Service: dist}}}, `path "slow" is not a URL path`},
		{Options{Routes: []Route{{Path: "/", Service: dist}, {Path: "/x"}}}, "route 1 (/x): no service time"},
		{Options{Routes: []Route{{Path: "/a", Service: dist}, {Path: "/b", Service: dist}, {Path: "/a", Service: dist}}}, `routes 0 and 2 both have path "/a"`},
		{Options{Routes: []Route{{Path: StatsPath, Service: dist}}}, "is under /_stampede/"},
	}
	for i, c := range cases {
		_, err := New(c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("step %d: New(%+v) error %v, want one containing %q", i, c.opts, err, c.want)
		}
	}
	for i, opts := range []Options{{}, {Pool: workerpool.Config{Workers: 8, Backlog: -1}, TimeScale: 0.01}, {Routes: []Route{{Path: "/", Service: dist}}}} {
		if _, err := New(opts); err != nil {
			t.Errorf("step %d: New(%+v): %v, want ok", i, opts, err)
		}
	}
}

// tickAfter returns the arbiter tick that kills a request still running at
// x, whose worker took it at x − Timeout.
func tickAfter(p *workerpool.Pool, x time.Duration) time.Duration {
	k, _ := p.KillTick(x - p.Config().Timeout)
	return k
}
