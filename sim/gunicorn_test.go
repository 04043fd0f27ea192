package sim

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"stampede/scenarios"
	"stampede/workerpool"
	"stampede/workload"
)

// These tests play the patterns of fakebackend's conformance test against
// real gunicorn (fakebackend/conformance_test.go) in the simulator, with the
// same numbers, and require the outcomes real gunicorn behind nginx gave.

// simShot is one request: a closed-model user of one iteration sending at
// at a request of service.
type simShot struct {
	at      time.Duration
	service time.Duration
	n       int // how many such users; zero means 1
}

// shotScenario is a scenario with a tenant per shot, each with a route of
// its service time.
func shotScenario(backend scenarios.Backend, proxy scenarios.Proxy, shots []simShot) *scenarios.Scenario {
	sc := &scenarios.Scenario{Name: "shots", Duration: time.Hour, Seed: 1, Backend: backend, Proxy: proxy}
	sc.Backend.Routes = nil
	for i, s := range shots {
		sc.Backend.Routes = append(sc.Backend.Routes, scenarios.Route{Name: fmt.Sprint(i), Path: fmt.Sprintf("/%d", i), Service: workerpool.Constant{D: s.service}})
		sc.Tenants = append(sc.Tenants, scenarios.TenantGroup{Group: fmt.Sprint(i), Count: 1, Host: fmt.Sprintf("s%d.example.com", i), Load: scenarios.Load{
			Model: scenarios.Closed, Users: max(s.n, 1), Iterations: 1, Start: s.at, OnTimeout: scenarios.GiveUp,
			Routes: []scenarios.WeightedRoute{{Route: i, Weight: 1}},
		}})
	}
	return sc
}

// playShots runs sc and returns the results of each shot, by when they end.
func playShots(t *testing.T, sc *scenarios.Scenario) ([][]workload.Result, Stats) {
	t.Helper()
	c := &collector{}
	st := mustRun(t, sc, c, Options{})
	out := make([][]workload.Result, len(sc.Tenants))
	for _, r := range c.results {
		out[r.Tenant] = append(out[r.Tenant], r)
	}
	return out, st
}

func statuses(rs []workload.Result) map[int]int {
	m := map[int]int{}
	for _, r := range rs {
		m[int(r.Status)]++
	}
	return m
}

func latencies(rs []workload.Result) []time.Duration {
	var l []time.Duration
	for _, r := range rs {
		l = append(l, r.Latency)
	}
	slices.Sort(l)
	return l
}

// gunicornProxy is nginx in front: its default connect timeout and the
// given read timeout.
func gunicornProxy(read time.Duration) scenarios.Proxy {
	return scenarios.Proxy{ReadTimeout: read, ConnectTimeout: 60 * time.Second}
}

func TestGunicornBacklogOverflow(t *testing.T) {
	backend := scenarios.Backend{Workers: 2, Backlog: 8, Timeout: 30 * time.Second, Boot: workerpool.DefaultBoot}
	for _, tc := range []struct {
		read time.Duration
		want map[int]int
		last [2]time.Duration // bounds on the last request's latency
	}{
		// gunicorn: 30 × 200, the last after 17.3 s; no 502.
		{60 * time.Second, map[int]int{200: 30}, [2]time.Duration{15 * time.Second, 20 * time.Second}},
		// gunicorn: 8 × 200, 22 × 504.
		{4500 * time.Millisecond, map[int]int{200: 8, 504: 22}, [2]time.Duration{4500 * time.Millisecond, 20 * time.Second}},
	} {
		sc := shotScenario(backend, gunicornProxy(tc.read), []simShot{{service: time.Second, n: 30}})
		got, st := playShots(t, sc)
		l := latencies(got[0])
		t.Logf("read timeout %v: %v; latencies %v; %d SYNs dropped", tc.read, statuses(got[0]), l, st.SYNDrops)
		if s := statuses(got[0]); fmt.Sprint(s) != fmt.Sprint(tc.want) {
			t.Errorf("read timeout %v: statuses %v, want %v", tc.read, s, tc.want)
		}
		if last := l[len(l)-1]; last < tc.last[0] || last > tc.last[1] {
			t.Errorf("read timeout %v: the last ended after %v, want within %v", tc.read, last, tc.last)
		}
		if st.SYNDrops == 0 || st.Backend.SYNDrops != st.SYNDrops {
			t.Errorf("read timeout %v: %d SYNs dropped, the pool counted %d; want some, the same", tc.read, st.SYNDrops, st.Backend.SYNDrops)
		}
	}
}

// TestGunicornSYNSchedule checks the schedule itself: with no backlog and
// one long request, a second connects on the SYN retransmission after the
// first ends, or the proxy's connect timeout gives 504, or, without one,
// the kernel gives up at 127 s and the proxy answers 502.
func TestGunicornSYNSchedule(t *testing.T) {
	backend := scenarios.Backend{Workers: 1, Backlog: -1}
	for _, tc := range []struct {
		name    string
		first   time.Duration // the first request's service
		connect time.Duration
		want    want
	}{
		// Sent at 0, 1, 3, 7 s: the worker is free from 5 s.
		{"served on the 4th SYN", 5 * time.Second, 60 * time.Second, want{workload.OK, 200, 7 * time.Second}},
		{"connect timeout", time.Hour, 10 * time.Second, want{workload.GatewayTimeout, 504, 10 * time.Second}},
		{"the kernel gives up", time.Hour, 0, want{workload.BackendError, 502, 127 * time.Second}},
	} {
		sc := shotScenario(backend, scenarios.Proxy{ConnectTimeout: tc.connect}, []simShot{{service: tc.first}, {at: time.Millisecond, service: 0}})
		got, _ := playShots(t, sc)
		check(t, tc.name, got[1], []want{tc.want})
	}
}

func TestGunicornTimeoutKillAndBoot(t *testing.T) {
	backend := scenarios.Backend{Workers: 1, Timeout: time.Second, Boot: workerpool.DefaultBoot}
	sc := shotScenario(backend, gunicornProxy(60*time.Second), []simShot{{service: 4 * time.Second}, {at: 100 * time.Millisecond, service: 0}})
	got, st := playShots(t, sc)
	kill := killAt(t, sc, 0)
	t.Logf("killed at %v; the queued request served at %v", kill, got[1][0].Latency+100*time.Millisecond)
	// Killed between the timeout and a tick later (gunicorn: 1.13–1.85 s
	// with --timeout 1); the queued request is served a boot later.
	if kill <= time.Second || kill > time.Second+workerpool.ArbiterTick {
		t.Errorf("kill at %v, want within (1s, 2s]", kill)
	}
	check(t, "killed", got[0], []want{{workload.BackendError, 502, kill}})
	check(t, "queued behind the kill", got[1], []want{{workload.OK, 200, kill + workerpool.DefaultBoot - 100*time.Millisecond}})
	if st.Backend.Killed != 1 || st.Backend.Booting != 0 {
		t.Errorf("backend %+v: want 1 killed, none booting at the end", st.Backend)
	}
}

// TestGunicornThreads checks the gthread worker: N requests at once per
// worker, and a request longer than the timeout not killed, as gunicorn
// 20.1 measured (a 6 s request with --threads 2 --timeout 2 served whole).
func TestGunicornThreads(t *testing.T) {
	backend := scenarios.Backend{Workers: 1, Threads: 2, Timeout: 2 * time.Second, Boot: workerpool.DefaultBoot}
	sc := shotScenario(backend, gunicornProxy(60*time.Second), []simShot{
		{service: 6 * time.Second},
		{at: 200 * time.Millisecond, service: 500 * time.Millisecond, n: 3},
	})
	got, _ := playShots(t, sc)
	check(t, "long", got[0], []want{{workload.OK, 200, 6 * time.Second}})
	// One thread is held by the long request: the three short ones take
	// turns on the other (gunicorn: 0.70, 1.21, 1.71 s after 0.2–0.4 s).
	if l := latencies(got[1]); !slices.Equal(l, []time.Duration{500 * time.Millisecond, time.Second, 1500 * time.Millisecond}) {
		t.Errorf("short ones: latencies %v, want 0.5s 1s 1.5s", l)
	}
}

// TestGunicornMaxRequests checks recycling: a worker leaves after
// max_requests plus its jitter draw, and its replacement boots first.
func TestGunicornMaxRequests(t *testing.T) {
	backend := scenarios.Backend{Workers: 1, MaxRequests: 2, Boot: time.Second}
	sc := shotScenario(backend, gunicornProxy(60*time.Second), []simShot{{service: time.Second, n: 3}})
	got, st := playShots(t, sc)
	// Two served, the worker exits at 2 s, the third is served after the
	// boot: 2 s + 1 s + 1 s.
	if l := latencies(got[0]); !slices.Equal(l, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}) {
		t.Errorf("latencies %v, want 1s 2s 4s", l)
	}
	if st.Backend.Recycled != 1 {
		t.Errorf("recycled %d, want 1", st.Backend.Recycled)
	}

	// Frappe's max_requests 5000 with jitter 500 (gunicorn adds a draw
	// from 0 to 500): every worker's life is within it, and the draws
	// depend on the seed alone.
	life := func(seed uint64) []int {
		p := workerpool.NewPool(workerpool.Config{Workers: 1, MaxRequests: 5000, MaxRequestsJitter: 500, Seed: seed})
		var served []int
		n := 0
		p.OnStart = func(*workerpool.Job) {}
		for i := range 30000 {
			j := &workerpool.Job{Service: time.Millisecond}
			at := time.Duration(i) * time.Millisecond
			p.Arrive(at, j)
			end, _ := p.End(j)
			before := p.Stats(at).Recycled
			p.Finish(end, j)
			n++
			if p.Stats(end).Recycled > before {
				served = append(served, n)
				n = 0
			}
		}
		return served
	}
	a, b := life(1), life(1)
	if !slices.Equal(a, b) || len(a) < 4 {
		t.Fatalf("seed 1: lives %v then %v, want the same, at least 4", a, b)
	}
	for i, n := range a {
		if n < 5000 || n > 5500 {
			t.Errorf("life %d: %d requests, want 5000 to 5500", i, n)
		}
	}
	if c := life(2); slices.Equal(a, c) {
		t.Errorf("seeds 1 and 2 gave the same lives %v", a)
	}
}
