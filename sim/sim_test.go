package sim

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"stampede/limit"
	"stampede/scenarios"
	"stampede/workerpool"
	"stampede/workload"
)

// collector keeps every result and every sample.
type collector struct {
	results []workload.Result
	busy    []sample
	keys    []map[string]int
}

type sample struct {
	at           time.Duration
	busy, queued int
}

func (c *collector) Add(r *workload.Result) { c.results = append(c.results, *r) }
func (c *collector) SampleBackend(at time.Duration, busy, queued int) {
	c.busy = append(c.busy, sample{at, busy, queued})
}
func (c *collector) SampleKeys(at time.Duration, m map[string]int) {
	c.keys = append(c.keys, maps(m))
}

func maps(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// busyAt returns the last backend sample at or before at.
func (c *collector) busyAt(t *testing.T, at time.Duration) sample {
	t.Helper()
	var s sample
	found := false
	for _, b := range c.busy {
		if b.at <= at {
			s, found = b, true
		}
	}
	if !found {
		t.Fatalf("no backend sample at or before %v", at)
	}
	return s
}

// counter counts results by outcome and hashes them: the recorder-less sink.
type counter struct {
	n    [workload.NumOutcomes]uint64
	work time.Duration // the sum of Result.Work
	hash uint64
}

func (c *counter) Add(r *workload.Result) {
	c.n[r.Outcome]++
	c.work += r.Work
	// An order-dependent mix of every field: cheap enough not to weigh on
	// the engine's benchmark.
	h := c.hash
	for _, v := range [...]uint64{uint64(r.Tenant)<<32 | uint64(r.Route)<<16 | uint64(r.Outcome)<<12 | uint64(r.Status), uint64(r.Intended), uint64(r.Latency), uint64(r.Work)} {
		h = (h ^ v) * 0x9E3779B97F4A7C15
		h ^= h >> 29
	}
	c.hash = h
}

func mustRun(t testing.TB, sc *scenarios.Scenario, sink workload.Sink, opts Options) Stats {
	t.Helper()
	st, err := Simulate(context.Background(), sc, sink, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return st
}

// one is a scenario with one tenant of one route.
func one(service workerpool.Dist, load scenarios.Load, backend scenarios.Backend, limits limit.Config) *scenarios.Scenario {
	backend.Routes = []scenarios.Route{{Name: "r", Path: "/", Service: service}}
	load.Routes = []scenarios.WeightedRoute{{Route: 0, Weight: 1}}
	return &scenarios.Scenario{
		Name:     "one",
		Duration: time.Minute,
		Seed:     1,
		Backend:  backend,
		Proxy:    scenarios.Proxy{Limits: limits},
		Tenants:  []scenarios.TenantGroup{{Group: "t", Count: 1, Host: "t.example.com", Load: load}},
	}
}

func connLimit(key string, n int) limit.Config {
	return limit.Config{Conn: []limit.ConnSpec{{Key: key, PerKey: n}}}
}

type want struct {
	outcome workload.Outcome
	status  int
	latency time.Duration
}

func check(t *testing.T, name string, got []workload.Result, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		t.Fatalf("%s: got %d results, want %d: %+v", name, len(got), len(wants), got)
	}
	for i, w := range wants {
		g := got[i]
		if g.Outcome != w.outcome || int(g.Status) != w.status || g.Latency != w.latency {
			t.Errorf("%s: step %d: got %v %d after %v, want %v %d after %v", name, i, g.Outcome, g.Status, g.Latency, w.outcome, w.status, w.latency)
		}
	}
}

// killAt returns when sc's worker timeout kills a job that started at start
// on a sync worker: on the arbiter's first tick past the timeout.
func killAt(t *testing.T, sc *scenarios.Scenario, start time.Duration) time.Duration {
	t.Helper()
	k, ok := workerpool.NewPool(sc.PoolConfig()).KillTick(start)
	if !ok {
		t.Fatalf("%s: the worker timeout kills nothing", sc.Name)
	}
	return k
}

func TestOutcomes(t *testing.T) {
	sec := time.Second
	closed := func(users int, timeout time.Duration) scenarios.Load {
		return scenarios.Load{Model: scenarios.Closed, Users: users, Iterations: 1, ClientTimeout: timeout, OnTimeout: scenarios.GiveUp}
	}
	killed := one(workerpool.Constant{D: 10 * sec}, closed(1, 0), scenarios.Backend{Workers: 1, Timeout: 2 * sec}, limit.Config{})
	for _, tc := range []struct {
		name    string
		sc      *scenarios.Scenario
		want    []want
		samples []sample // backend state at sample times
	}{
		{
			name: "ok",
			sc:   one(workerpool.Constant{D: 2 * sec}, closed(1, 0), scenarios.Backend{Workers: 1}, limit.Config{}),
			want: []want{{workload.OK, 200, 2 * sec}},
		},
		{
			name:    "client timeout, worker goes on",
			sc:      one(workerpool.Constant{D: 10 * sec}, closed(1, 3*sec), scenarios.Backend{Workers: 1}, limit.Config{}),
			want:    []want{{workload.ClientTimeout, 0, 3 * sec}},
			samples: []sample{{5 * sec, 1, 0}, {9 * sec, 1, 0}, {10 * sec, 0, 0}},
		},
		{
			name:    "client timeout, worker cancelled",
			sc:      one(workerpool.Constant{D: 10 * sec}, closed(1, 3*sec), scenarios.Backend{Workers: 1, OnClientAbort: workerpool.Cancel}, limit.Config{}),
			want:    []want{{workload.ClientTimeout, 0, 3 * sec}},
			samples: []sample{{3 * sec, 0, 0}, {5 * sec, 0, 0}},
		},
		{
			name: "worker killed",
			sc:   killed,
			want: []want{{workload.BackendError, 502, killAt(t, killed, 0)}},
		},
		{
			// listen(2) backlog 1 holds 2; the fourth is refused at once.
			name: "backlog full, reset",
			sc:   one(workerpool.Constant{D: 1 * sec}, closed(4, 0), scenarios.Backend{Workers: 1, Backlog: 1, Overflow: workerpool.Reset}, limit.Config{}),
			want: []want{
				{workload.BackendError, 502, 0},
				{workload.OK, 200, 1 * sec},
				{workload.OK, 200, 2 * sec},
				{workload.OK, 200, 3 * sec},
			},
		},
		{
			// The fourth's SYN is dropped at 0 and sent again at 1 s, when
			// the first has left and the backlog has room: it is served
			// last, late.
			name: "backlog full, drop",
			sc:   one(workerpool.Constant{D: 1 * sec}, closed(4, 0), scenarios.Backend{Workers: 1, Backlog: 1}, limit.Config{}),
			want: []want{
				{workload.OK, 200, 1 * sec},
				{workload.OK, 200, 2 * sec},
				{workload.OK, 200, 3 * sec},
				{workload.OK, 200, 4 * sec},
			},
		},
		{
			name: "limit_conn",
			sc:   one(workerpool.Constant{D: 1 * sec}, closed(3, 0), scenarios.Backend{Workers: 8}, connLimit("$host", 2)),
			want: []want{
				{workload.Rejected, 503, 0},
				{workload.OK, 200, 1 * sec},
				{workload.OK, 200, 1 * sec},
			},
		},
	} {
		c := &collector{}
		mustRun(t, tc.sc, c, Options{})
		check(t, tc.name, c.results, tc.want)
		for _, w := range tc.samples {
			if g := c.busyAt(t, w.at); g.busy != w.busy || g.queued != w.queued {
				t.Errorf("%s: at %v: busy %d queued %d, want %d and %d", tc.name, w.at, g.busy, g.queued, w.busy, w.queued)
			}
		}
	}
}

func TestReadTimeoutCountsBacklog(t *testing.T) {
	// One worker, two 4 s requests at once, read timeout 6 s: the second
	// waits 4 s in the backlog, so the proxy gives up at 6 s, while the
	// worker (continue) goes on until 8 s.
	sc := one(workerpool.Constant{D: 4 * time.Second},
		scenarios.Load{Model: scenarios.Closed, Users: 2, Iterations: 1},
		scenarios.Backend{Workers: 1}, limit.Config{})
	sc.Proxy.ReadTimeout = 6 * time.Second
	c := &collector{}
	st := mustRun(t, sc, c, Options{})
	check(t, "read timeout", c.results, []want{
		{workload.OK, 200, 4 * time.Second},
		{workload.GatewayTimeout, 504, 6 * time.Second},
	})
	if g := c.busyAt(t, 7*time.Second); g.busy != 1 {
		t.Errorf("at 7s: busy %d, want 1 (the abandoned job runs on)", g.busy)
	}
	if st.Backend.Served != 2 || st.Backend.Abandoned != 1 || st.Backend.Busy != 0 {
		t.Errorf("backend: served %d abandoned %d busy %d, want 2, 1, 0", st.Backend.Served, st.Backend.Abandoned, st.Backend.Busy)
	}
}

func TestClientTimeoutFreesSlot(t *testing.T) {
	// limit_conn 1; a user whose 10 s request times out at 3 s retries at
	// once: the slot was released, so the retry passes limit_conn although
	// the first job still holds the only worker (continue).
	sc := one(workerpool.Constant{D: 10 * time.Second},
		scenarios.Load{Model: scenarios.Closed, Users: 1, Iterations: 1, ClientTimeout: 3 * time.Second, OnTimeout: scenarios.Retry},
		scenarios.Backend{Workers: 1}, connLimit("$host", 1))
	sc.Duration = 8 * time.Second
	c := &collector{}
	mustRun(t, sc, c, Options{})
	check(t, "retry", c.results, []want{
		{workload.ClientTimeout, 0, 3 * time.Second},
		{workload.ClientTimeout, 0, 3 * time.Second}, // queued behind the first
		{workload.ClientTimeout, 0, 3 * time.Second}, // sent at 6 s, before the stop at 8 s
	})
	if g := c.busyAt(t, 7*time.Second); g.busy != 1 || g.queued != 2 {
		t.Errorf("at 7s: busy %d queued %d, want 1 and 2", g.busy, g.queued)
	}

	// give_up stops after the first timeout.
	sc.Tenants[0].Load.OnTimeout = scenarios.GiveUp
	c = &collector{}
	mustRun(t, sc, c, Options{})
	check(t, "give up", c.results, []want{{workload.ClientTimeout, 0, 3 * time.Second}})
}

func TestLimitReqDelay(t *testing.T) {
	// rate=5r/s burst=12 delay=8, 14 at once: 1–9 at once, 10–13 delayed
	// 200/400/600/800 ms, 14 rejected (DESIGN.md).
	sc := one(workerpool.Constant{D: 0},
		scenarios.Load{Model: scenarios.Closed, Users: 14, Iterations: 1},
		scenarios.Backend{Workers: 100},
		limit.Config{Req: []limit.ReqSpec{{Key: "$host", Rate: "5r/s", Burst: 12, Delay: 8}}})
	c := &collector{}
	st := mustRun(t, sc, c, Options{})
	var wants []want
	wants = append(wants, want{workload.Rejected, 503, 0})
	for range 9 {
		wants = append(wants, want{workload.OK, 200, 0})
	}
	for i := 1; i <= 4; i++ {
		wants = append(wants, want{workload.OK, 200, time.Duration(i) * 200 * time.Millisecond})
	}
	slices.SortStableFunc(c.results, func(a, b workload.Result) int {
		if a.Outcome != b.Outcome {
			return int(b.Outcome) - int(a.Outcome)
		}
		return int(a.Latency - b.Latency)
	})
	check(t, "limit_req", c.results, wants)
	if st.Delayed != 4 {
		t.Errorf("Delayed = %d, want 4", st.Delayed)
	}
}

func TestDelayHoldsNoSlotAndClientTimeoutDuringDelay(t *testing.T) {
	// limit_req 1r/s burst 5 delays the second to sixth request 1..5 s;
	// the client gives up after 2.5 s, during the delay of the last three.
	sc := one(workerpool.Constant{D: 100 * time.Millisecond},
		scenarios.Load{Model: scenarios.Closed, Users: 6, Iterations: 1, ClientTimeout: 2500 * time.Millisecond, OnTimeout: scenarios.GiveUp},
		scenarios.Backend{Workers: 10},
		limit.Config{
			Req:  []limit.ReqSpec{{Key: "$host", Rate: "1r/s", Burst: 5}},
			Conn: []limit.ConnSpec{{Key: "$host", PerKey: 1}},
		})
	c := &collector{}
	st := mustRun(t, sc, c, Options{})
	var n [workload.NumOutcomes]int
	for _, r := range c.results {
		n[r.Outcome]++
	}
	// Delayed requests hold no limit_conn slot, so each, released 1 s
	// apart, finds the slot free.
	if n[workload.OK] != 3 || n[workload.ClientTimeout] != 3 || st.Backend.Arrived != 3 {
		t.Errorf("ok %d, client timeouts %d, backend arrivals %d; want 3, 3, 3", n[workload.OK], n[workload.ClientTimeout], st.Backend.Arrived)
	}
}

func TestDropped(t *testing.T) {
	sc := one(workerpool.Constant{D: time.Hour},
		scenarios.Load{Model: scenarios.Open, Arrivals: scenarios.Constant, Rate: 1, MaxInFlight: 3, ClientTimeout: 20 * time.Second},
		scenarios.Backend{Workers: 100}, limit.Config{})
	c := &collector{}
	st := mustRun(t, sc, c, Options{})
	// 60 arrivals a second apart; each admitted one times out after 20 s
	// (the timeout, scheduled first, goes before an arrival at the same
	// instant), so each 20 s admits 3 and drops 17.
	if got := st.Outcomes[workload.Dropped] + st.Outcomes[workload.ClientTimeout]; got != 60 {
		t.Errorf("dropped + client timeouts = %d, want 60", got)
	}
	if got := st.Outcomes[workload.ClientTimeout]; got != 9 {
		t.Errorf("client timeouts = %d, want 9 (3 per 20 s)", got)
	}
	for _, r := range c.results {
		if r.Outcome == workload.Dropped && r.Latency != 0 {
			t.Fatalf("dropped with latency %v", r.Latency)
		}
	}
}

func TestCutOffAtDrain(t *testing.T) {
	sc := one(workerpool.Constant{D: time.Hour},
		scenarios.Load{Model: scenarios.Closed, Users: 1, Iterations: 1},
		scenarios.Backend{Workers: 1}, limit.Config{})
	c := &collector{}
	st := mustRun(t, sc, c, Options{Drain: time.Minute})
	check(t, "cut off", c.results, []want{{workload.ClientTimeout, 0, 2 * time.Minute}})
	if st.CutOff != 1 {
		t.Errorf("CutOff = %d, want 1", st.CutOff)
	}
}

// cancelled returns a scenario of an hour and a sink that cancels the
// returned context at its 1000th result.
func cancelled() (context.Context, *scenarios.Scenario, workload.Sink) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	sink := workload.SinkFunc(func(*workload.Result) {
		if n++; n == 1000 {
			cancel()
		}
	})
	sc := one(workerpool.Exp{Avg: time.Millisecond}, scenarios.Load{Rate: 1000}, scenarios.Backend{Workers: 4}, limit.Config{})
	sc.Duration = time.Hour
	return ctx, sc, sink
}

func TestCancel(t *testing.T) {
	ctx, sc, sink := cancelled()
	st, err := Simulate(ctx, sc, sink, Options{})
	if err != context.Canceled || !st.Interrupted {
		t.Fatalf("Simulate: err %v, interrupted %v; want context.Canceled, true", err, st.Interrupted)
	}
	if st.Requests > 1000+checkEvery {
		t.Errorf("%d results after the cancel at 1000", st.Requests)
	}

	// Run, as the live engine: an interrupted run is no error, and says
	// how far it got.
	ctx, sc, sink = cancelled()
	info, err := Run(ctx, sc, sink, Options{})
	if err != nil || !info.Interrupted || info.Engine != Engine {
		t.Fatalf("Run: err %v, interrupted %v, engine %q; want nil, true, %q", err, info.Interrupted, info.Engine, Engine)
	}
	if info.Model <= 0 || info.Model >= sc.Duration {
		t.Errorf("Run: Model %v, want how far the run got, above 0 and short of %v", info.Model, sc.Duration)
	}
}

// erlangScenario is one Poisson tenant at lambda/s on a route of service
// dist, for model time d.
func erlangScenario(lambda float64, dist workerpool.Dist, workers int, limits limit.Config, d time.Duration) *scenarios.Scenario {
	sc := one(dist, scenarios.Load{Model: scenarios.Open, Arrivals: scenarios.Poisson, Rate: lambda, MaxInFlight: 1 << 30},
		scenarios.Backend{Workers: workers}, limits)
	sc.Duration = d
	sc.Seed = 20260101
	return sc
}

func TestErlangB(t *testing.T) {
	const (
		limit  = 10
		lambda = 80.0 // per second
	)
	mean := 100 * time.Millisecond // about 8 erlangs
	// The formula holds whatever the distribution of the service time.
	for _, dist := range []workerpool.Dist{
		workerpool.Exp{Avg: mean},
		workerpool.Constant{D: mean},
		workerpool.Uniform{Min: 0, Max: 2 * mean},
		workerpool.LogNormal{Median: 70 * time.Millisecond, P99: 500 * time.Millisecond},
	} {
		a := lambda * dist.Mean().Seconds()
		w := ErlangB(a, limit)
		st := mustRun(t, erlangScenario(lambda, dist, 1000, connLimit("$host", limit), time.Hour), nil, Options{})
		got := float64(st.Outcomes[workload.Rejected]) / float64(max(st.Requests, 1))
		t.Logf("Erlang B, %v service, %.2f erlangs, %d slots: rejected %.4f, formula %.4f (%d requests)", dist, a, limit, got, w, st.Requests)
		if math.Abs(got-w) > 0.01 {
			t.Errorf("%v service: rejected share %.4f, Erlang B %.4f: off by more than 0.01", dist, got, w)
		}
	}
}

func TestErlangC(t *testing.T) {
	const (
		workers = 8
		lambda  = 56.0
	)
	mean := 100 * time.Millisecond // 5.6 erlangs on 8 workers: ρ = 0.7
	a := lambda * mean.Seconds()
	wantP := ErlangC(a, workers)
	wantW := ErlangCWait(lambda, mean, workers)
	st := mustRun(t, erlangScenario(lambda, workerpool.Exp{Avg: mean}, workers, limit.Config{}, 10*time.Hour), nil, Options{})
	gotP := float64(st.Waited) / float64(st.Backend.Arrived)
	gotW := st.WaitTime / time.Duration(st.Started)
	t.Logf("Erlang C, %d workers, %.1f erlangs: P(wait) %.4f, formula %.4f; mean wait %v, formula %v (%d requests)", workers, a, gotP, wantP, gotW, wantW, st.Requests)
	if math.Abs(gotP/wantP-1) > 0.03 {
		t.Errorf("P(wait) %.4f, Erlang C %.4f: off by more than 3%%", gotP, wantP)
	}
	if math.Abs(float64(gotW)/float64(wantW)-1) > 0.03 {
		t.Errorf("mean wait %v, Erlang C %v: off by more than 3%%", gotW, wantW)
	}
	if st.Started != st.Backend.Arrived || st.Backend.Served != st.Started {
		t.Errorf("started %d, arrived %d, served %d: want all equal", st.Started, st.Backend.Arrived, st.Backend.Served)
	}
}

// stockBalance is scenarios/stock-balance.yaml as a struct, so the test does
// not depend on the file format.
func stockBalance(limit int) *scenarios.Scenario {
	page, _ := workerpool.ParseDist("lognormal:median=30ms,p99=200ms")
	report, _ := workerpool.ParseDist("uniform:2m..4m")
	sc := &scenarios.Scenario{
		Name:      "stock-balance",
		Duration:  10 * time.Minute,
		TimeScale: 0.01,
		Seed:      1,
		Backend: scenarios.Backend{
			Workers: 8, Backlog: 2048, Timeout: 120 * time.Second,
			Routes: []scenarios.Route{
				{Name: "page", Path: "/app", Service: page},
				{Name: "stock-balance", Path: "/api/method/stock_balance", Service: report},
			},
		},
		Proxy: scenarios.Proxy{ReadTimeout: 120 * time.Second},
		Tenants: []scenarios.TenantGroup{
			{Group: "other-sites", Count: 249, Host: "site{i}.example.com", Load: scenarios.Load{
				Model: scenarios.Open, Arrivals: scenarios.Poisson, Rate: 0.2,
				Routes: []scenarios.WeightedRoute{{Route: 0, Weight: 1}}, ClientTimeout: 2 * time.Minute,
			}},
			{Group: "user-x", Count: 1, Host: "x.example.com", Load: scenarios.Load{
				Model: scenarios.Closed, Users: 8, Start: time.Minute, Iterations: 1,
				Routes: []scenarios.WeightedRoute{{Route: 1, Weight: 1}}, ClientTimeout: 5 * time.Minute,
			}},
		},
	}
	if limit > 0 {
		sc.Proxy.Limits = connLimit("$host", limit)
	}
	return sc
}

// groupStats splits results by group: counts by outcome and ok latencies.
type groupStats struct {
	n   [workload.NumOutcomes]int
	lat []time.Duration
}

func byGroup(sc *scenarios.Scenario, results []workload.Result) map[string]*groupStats {
	tenants := sc.Expand()
	out := map[string]*groupStats{}
	for _, r := range results {
		g := tenants[r.Tenant].Group
		if out[g] == nil {
			out[g] = &groupStats{}
		}
		out[g].n[r.Outcome]++
		if r.Outcome == workload.OK {
			out[g].lat = append(out[g].lat, r.Latency)
		}
	}
	return out
}

func (g *groupStats) p(q float64) time.Duration {
	if len(g.lat) == 0 {
		return 0
	}
	slices.Sort(g.lat)
	return g.lat[min(len(g.lat)-1, int(math.Ceil(q*float64(len(g.lat))))-1)]
}

func TestStockBalance(t *testing.T) {
	// As the file has it, the worker timeout and the proxy's read timeout
	// (120 s) are shorter than the report (2-4 min): the proxy gives up on
	// the 4 admitted reports at 120 s (504), before gunicorn's arbiter
	// kills their workers on its next tick, up to a second later. With
	// both timeouts at 5 min the 4 reports are served. Either way the
	// limit keeps 4 workers for the other sites.
	for _, tc := range []struct {
		timeout time.Duration
		xOK     int
		xErr    int
	}{
		{0, 0, 4},
		{5 * time.Minute, 4, 0},
	} {
		sc := stockBalance(4)
		if tc.timeout > 0 {
			sc.Backend.Timeout, sc.Proxy.ReadTimeout = tc.timeout, tc.timeout
		}
		c := &collector{}
		st := mustRun(t, sc, c, Options{})
		g := byGroup(sc, c.results)
		x, other := g["user-x"], g["other-sites"]
		t.Logf("limit 4, timeouts %v: user-x %v, latencies %v; other-sites %v, p50 %v p99 %v; %d events",
			sc.Backend.Timeout, x.n, x.lat, other.n, other.p(0.5), other.p(0.99), st.Events)
		if x.n[workload.OK] != tc.xOK || x.n[workload.GatewayTimeout] != tc.xErr || x.n[workload.Rejected] != 4 {
			t.Errorf("timeouts %v: user-x %v; want %d ok, %d gateway timeouts, 4 rejected", sc.Backend.Timeout, x.n, tc.xOK, tc.xErr)
		}
		total := 0
		for _, n := range other.n {
			total += n
		}
		if other.n[workload.OK] != total || total < 28000 {
			t.Errorf("timeouts %v: other-sites %v; want every one of about 29880 ok", sc.Backend.Timeout, other.n)
		}
		if p99 := other.p(0.99); p99 >= time.Second {
			t.Errorf("timeouts %v: other-sites: p99 %v, want under 1s", sc.Backend.Timeout, p99)
		}
		// The key sampler saw x.example.com at its limit while the reports ran.
		peak := 0
		for _, m := range c.keys {
			peak = max(peak, m["x.example.com"])
		}
		if peak != 4 {
			t.Errorf("timeouts %v: x.example.com: peak in-flight %d in the key samples, want 4", sc.Backend.Timeout, peak)
		}
		if b := c.busyAt(t, 90*time.Second); b.busy < 4 {
			t.Errorf("timeouts %v: at 90s: %d workers busy, want the 4 reports at least", sc.Backend.Timeout, b.busy)
		}
	}

	// Without the limit the reports take all 8 workers and everyone else
	// waits until their browsers give up.
	sc := stockBalance(0)
	c := &collector{}
	mustRun(t, sc, c, Options{})
	g := byGroup(sc, c.results)
	x, other := g["user-x"], g["other-sites"]
	t.Logf("no limit: user-x %v; other-sites %v, p50 %v p99 %v", x.n, other.n, other.p(0.5), other.p(0.99))
	if x.n[workload.Rejected] != 0 {
		t.Errorf("no limit: user-x %v; want none rejected", x.n)
	}
	// The backlog (2048) fills within a minute: later pages' SYNs are
	// dropped and retried, those that got in waited minutes, and many
	// browsers gave up first ("Request Timed Out"); no page is refused
	// (502) at once.
	if failed := len(c.results) - len(x.lat) - len(other.lat); failed < 500 || other.p(0.99) < 10*time.Second {
		t.Errorf("no limit: other-sites %v, p99 %v; want over 500 failed and p99 over 10s", other.n, other.p(0.99))
	}
	if other.n[workload.BackendError] != 0 {
		t.Errorf("no limit: other-sites %v; want no 502", other.n)
	}
}

func TestDeterministic(t *testing.T) {
	run := func(seed uint64, limit int) (uint64, Stats) {
		sc := stockBalance(limit)
		sc.Seed = seed
		var c counter
		st := mustRun(t, sc, &c, Options{})
		return c.hash, st
	}
	for _, limit := range []int{0, 4} {
		a, sa := run(1, limit)
		b, sb := run(1, limit)
		if a != b || sa != sb {
			t.Errorf("limit %d: two runs of seed 1: hashes %x and %x, stats %+v and %+v", limit, a, b, sa, sb)
		}
		if c, _ := run(2, limit); c == a {
			t.Errorf("limit %d: seeds 1 and 2 gave the same results (hash %x)", limit, a)
		}
	}
}

func TestErlangFormulas(t *testing.T) {
	for i, tc := range []struct {
		name      string
		got, want float64
	}{
		{"B(1, 1)", ErlangB(1, 1), 0.5},
		{"B(2, 2)", ErlangB(2, 2), 0.4},
		{"B(8, 10)", ErlangB(8, 10), 0.12166},
		{"C(1, 2)", ErlangC(1, 2), 1.0 / 3},
		{"C(5.6, 8)", ErlangC(5.6, 8), 0.27060},
		{"C(9, 8)", ErlangC(9, 8), 1},
	} {
		if math.Abs(tc.got-tc.want) > 1e-4 {
			t.Errorf("step %d: %s = %.5f, want %.5f", i, tc.name, tc.got, tc.want)
		}
	}
	if got, want := ErlangCWait(1, time.Second, 2), time.Second/3; got < want-time.Microsecond || got > want+time.Microsecond {
		t.Errorf("ErlangCWait(1/s, 1s, 2) = %v, want %v", got, want)
	}
}

func TestWork(t *testing.T) {
	sec := time.Second
	closed := func(users int, timeout time.Duration) scenarios.Load {
		return scenarios.Load{Model: scenarios.Closed, Users: users, Iterations: 1, ClientTimeout: timeout, OnTimeout: scenarios.GiveUp}
	}
	readTimeout := func(sc *scenarios.Scenario, d time.Duration) *scenarios.Scenario {
		sc.Proxy.ReadTimeout = d
		return sc
	}
	cancel := scenarios.Backend{Workers: 1, OnClientAbort: workerpool.Cancel}
	goesOnKilled := one(workerpool.Constant{D: 10 * sec}, closed(1, 3*sec), scenarios.Backend{Workers: 1, Timeout: 5 * sec}, limit.Config{})
	killed := one(workerpool.Constant{D: 10 * sec}, closed(1, 0), scenarios.Backend{Workers: 1, Timeout: 2 * sec}, limit.Config{})
	for _, tc := range []struct {
		name string
		sc   *scenarios.Scenario
		work []time.Duration // per result, in the order they come
	}{
		{"ok", one(workerpool.Constant{D: 2 * sec}, closed(1, 0), scenarios.Backend{Workers: 1}, limit.Config{}), []time.Duration{2 * sec}},
		// The result is out at 3 s, but the worker goes on to 10 s.
		{"client timeout, worker goes on", one(workerpool.Constant{D: 10 * sec}, closed(1, 3*sec), scenarios.Backend{Workers: 1}, limit.Config{}), []time.Duration{10 * sec}},
		{"client timeout, worker goes on to be killed", goesOnKilled, []time.Duration{killAt(t, goesOnKilled, 0)}},
		{"client timeout, worker cancelled", one(workerpool.Constant{D: 10 * sec}, closed(1, 3*sec), cancel, limit.Config{}), []time.Duration{3 * sec}},
		{"worker killed", killed, []time.Duration{killAt(t, killed, 0)}},
		{"backlog full", one(workerpool.Constant{D: sec}, closed(4, 0), scenarios.Backend{Workers: 1, Backlog: 1, Overflow: workerpool.Reset}, limit.Config{}), []time.Duration{0, sec, sec, sec}},
		{"limit_conn", one(workerpool.Constant{D: sec}, closed(3, 0), scenarios.Backend{Workers: 8}, connLimit("$host", 2)), []time.Duration{0, sec, sec}},
		// The second waits 4 s, the proxy gives up at 6 s; under continue
		// it still runs 4 s once the first is done.
		{"abandoned in the backlog, continue", readTimeout(one(workerpool.Constant{D: 4 * sec}, closed(2, 0), scenarios.Backend{Workers: 1}, limit.Config{}), 6*sec), []time.Duration{4 * sec, 4 * sec}},
		// Under cancel it leaves the backlog having used no worker, and
		// the first, abandoned while running, used the 6 s it ran.
		{"abandoned in the backlog, cancel", readTimeout(one(workerpool.Constant{D: 8 * sec}, closed(2, 0), cancel, limit.Config{}), 6*sec), []time.Duration{6 * sec, 0}},
	} {
		c := &collector{}
		st := mustRun(t, tc.sc, c, Options{})
		var sum time.Duration
		for i, r := range c.results {
			sum += r.Work
			if i < len(tc.work) && r.Work != tc.work[i] {
				t.Errorf("%s: step %d: %v after %v: got Work %v, want %v", tc.name, i+1, r.Outcome, r.Latency, r.Work, tc.work[i])
			}
		}
		if len(c.results) != len(tc.work) {
			t.Errorf("%s: got %d results, want %d", tc.name, len(c.results), len(tc.work))
		}
		if sum != st.Backend.BusyTime {
			t.Errorf("%s: Work sums to %v, the backend was busy %v", tc.name, sum, st.Backend.BusyTime)
		}
	}
}

// TestWorkMatchesBusyTime plays the stock-balance incident without a limit
// and with the worker timeout (reports killed at 120 s), read and client
// timeouts abandoning running and queued pages under continue, and holds
// the results' worker time against the backend's busy time.
func TestWorkMatchesBusyTime(t *testing.T) {
	for _, limit := range []int{0, 4} {
		sc := stockBalance(limit)
		var c counter
		var killed, abandoned time.Duration
		var nKilled uint64
		sink := workload.SinkFunc(func(r *workload.Result) {
			c.Add(r)
			switch {
			case r.Outcome == workload.BackendError && r.Work > 0:
				// A 502 with work is a killed worker: it ran until
				// the arbiter's tick past the timeout.
				if r.Work <= sc.Backend.Timeout || r.Work > sc.Backend.Timeout+workerpool.ArbiterTick {
					t.Errorf("limit %d: a 502 after %v used %v of a worker, want within a tick past the timeout %v", limit, r.Latency, r.Work, sc.Backend.Timeout)
				}
				nKilled++
				killed += r.Work
			case r.Outcome == workload.GatewayTimeout || r.Outcome == workload.ClientTimeout:
				abandoned += r.Work
			}
		})
		// An hour of drain: every job the backend took ends within it.
		st := mustRun(t, sc, sink, Options{Drain: time.Hour})
		t.Logf("limit %d: %v; work %v (killed %v, abandoned %v), busy %v", limit, c.n, c.work, killed, abandoned, st.Backend.BusyTime)
		if st.CutOff != 0 || st.Backend.Busy != 0 || st.Backend.Queued != 0 {
			t.Fatalf("limit %d: %d cut off, %d busy, %d queued at the end; want none", limit, st.CutOff, st.Backend.Busy, st.Backend.Queued)
		}
		if off := (c.work - st.Backend.BusyTime).Abs(); off > time.Duration(st.KillGuessed)*workerpool.ArbiterTick/2 {
			t.Errorf("limit %d: the results' Work sums to %v, the backend was busy %v, off by %v over %d guessed kills", limit, c.work, st.Backend.BusyTime, off, st.KillGuessed)
		}
		// Jobs abandoned before their kill are killed too, so the pool
		// counts at least the 502s; the proxy's read timeout, as long as
		// the worker's, mostly comes first.
		if st.Backend.Killed == 0 || nKilled > st.Backend.Killed {
			t.Errorf("limit %d: %d 502s from killed workers, the pool killed %d; want some killed, and at most that many 502s", limit, nKilled, st.Backend.Killed)
		}
		if limit == 0 && abandoned == 0 {
			t.Errorf("limit 0: no worker time in abandoned requests; the test does not cover them")
		}
	}

	// A request cut off when the drain runs out is the one deliberate
	// difference: its result counts the whole hour its worker will go on
	// for, the backend's busy time stops at the end of the run.
	sc := one(workerpool.Constant{D: time.Hour}, scenarios.Load{Model: scenarios.Closed, Users: 1, Iterations: 1},
		scenarios.Backend{Workers: 1}, limit.Config{})
	var c counter
	st := mustRun(t, sc, &c, Options{Drain: time.Minute})
	if c.work != time.Hour || st.Backend.BusyTime != 2*time.Minute {
		t.Errorf("cut off: Work %v, busy %v; want 1h and 2m", c.work, st.Backend.BusyTime)
	}
}

// TestInvariants plays random small scenarios mixing every outcome —
// limit_req delays and rejections, limit_conn, a short backlog, killed
// workers, read and client timeouts, continue and cancel, open and closed
// tenants — and checks what must hold whatever happens: every request ends
// once, no limit_conn slot leaks, the backend drains, every pooled request
// comes back, the results' worker time is the backend's busy time.
func TestInvariants(t *testing.T) {
	var seen [workload.NumOutcomes]uint64
	var delayed uint64
	for seed := uint64(1); seed <= 40; seed++ {
		rng := workload.TenantRand(seed, 1000)
		d := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo))) }
		sc := &scenarios.Scenario{
			Name:     "random",
			Duration: d(10*time.Second, 2*time.Minute),
			Seed:     seed,
			Backend: scenarios.Backend{
				Workers: 1 + rng.IntN(6),
				Backlog: rng.IntN(8) - 1,
				Routes: []scenarios.Route{
					{Name: "fast", Path: "/", Service: workerpool.Exp{Avg: d(time.Millisecond, 300*time.Millisecond)}},
					{Name: "slow", Path: "/slow", Service: workerpool.Uniform{Min: time.Second, Max: d(2*time.Second, 20*time.Second)}},
				},
			},
		}
		if rng.IntN(2) == 0 {
			sc.Backend.Timeout = d(time.Second, 10*time.Second)
		}
		if rng.IntN(2) == 0 {
			sc.Backend.OnClientAbort = workerpool.Cancel
		}
		if rng.IntN(2) == 0 {
			sc.Proxy.ReadTimeout = d(time.Second, 10*time.Second)
		}
		if rng.IntN(3) > 0 {
			sc.Proxy.Limits.Conn = append(sc.Proxy.Limits.Conn, limit.ConnSpec{Key: "$host", PerKey: 1 + rng.IntN(4)})
		}
		if rng.IntN(3) > 0 {
			sc.Proxy.Limits.Conn = append(sc.Proxy.Limits.Conn, limit.ConnSpec{Key: "$binary_remote_addr", PerKey: 1 + rng.IntN(6)})
		}
		if rng.IntN(2) == 0 {
			sc.Proxy.Limits.Req = append(sc.Proxy.Limits.Req, limit.ReqSpec{Key: "$host", Rate: "5r/s", Burst: rng.IntN(10), Delay: rng.IntN(3), NoDelay: rng.IntN(3) == 0})
		}
		mix := []scenarios.WeightedRoute{{Route: 0, Weight: 3}, {Route: 1, Weight: 1}}
		sc.Tenants = []scenarios.TenantGroup{
			{Group: "open", Count: 1 + rng.IntN(5), Host: "o{i}.example", Addr: "10.0.0.{i}", Load: scenarios.Load{
				Model: scenarios.Open, Arrivals: scenarios.Arrivals(rng.IntN(2)), Rate: 0.5 + 5*rng.Float64(),
				MaxInFlight: rng.IntN(6), ClientTimeout: d(0, 8*time.Second), Routes: mix,
			}},
			{Group: "closed", Count: 1 + rng.IntN(2), Host: "c{i}.example", Addr: "10.0.0.1", Load: scenarios.Load{
				Model: scenarios.Closed, Users: 1 + rng.IntN(6), Think: d(0, time.Second), Iterations: rng.IntN(5),
				OnTimeout: scenarios.OnTimeout(rng.IntN(2)), ClientTimeout: d(0, 8*time.Second), Routes: mix,
			}},
		}
		var c counter
		e, err := newEngine(sc, &c, Options{Drain: time.Hour, MaxInFlight: 5 + rng.IntN(20)})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := e.run(context.Background()); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		st := e.stats
		delayed += st.Delayed
		for o, n := range st.Outcomes {
			seen[o] += n
		}
		var sum uint64
		for o, n := range c.n {
			sum += n
			if n != st.Outcomes[o] {
				t.Errorf("seed %d: %v: sink saw %d, stats %d", seed, workload.Outcome(o), n, st.Outcomes[o])
			}
		}
		if sum != st.Requests || sum == 0 {
			t.Errorf("seed %d: %d results, stats say %d", seed, sum, st.Requests)
		}
		if st.CutOff != 0 {
			t.Errorf("seed %d: %d requests cut off within an hour of drain", seed, st.CutOff)
		}
		if keys := e.policy.Busiest(5); len(keys) != 0 {
			t.Errorf("seed %d: limit_conn keys still held after the run: %v", seed, keys)
		}
		for i := range e.policy.Conn {
			if n := e.policy.Conn[i].Limiter.Len(); n != 0 {
				t.Errorf("seed %d: limit_conn %d: %d keys in the zone after the run", seed, i, n)
			}
		}
		if busy, queued := e.pool.Busy(); busy != 0 || queued != 0 {
			t.Errorf("seed %d: backend busy %d queued %d after the run", seed, busy, queued)
		}
		if e.open != 0 {
			t.Errorf("seed %d: %d open requests without a result", seed, e.open)
		}
		inUse := 0
		for _, chunk := range e.chunks {
			for i := range chunk {
				if chunk[i].inUse {
					inUse++
				}
			}
		}
		if inUse != 0 {
			t.Errorf("seed %d: %d pooled requests not returned", seed, inUse)
		}
		b := st.Backend
		// Nothing was cut off and the backend drained, so every job's
		// work is both in some result and in the pool's busy time.
		// A queued job whose kill was guessed (engine.work) is off by at
		// most half an arbiter tick.
		if off := (c.work - b.BusyTime).Abs(); off > time.Duration(st.KillGuessed)*workerpool.ArbiterTick/2 {
			t.Errorf("seed %d: the results' Work sums to %v, the backend was busy %v: off by %v, over %d guessed kills × %v", seed, c.work, b.BusyTime, off, st.KillGuessed, workerpool.ArbiterTick/2)
		}
		if b.Arrived != b.Served+b.Killed+b.Refused+b.Cancelled+b.GaveUp {
			t.Errorf("seed %d: backend arrived %d ≠ served %d + killed %d + refused %d + cancelled %d + gave up %d", seed, b.Arrived, b.Served, b.Killed, b.Refused, b.Cancelled, b.GaveUp)
		}
	}
	t.Logf("outcomes over all seeds: %v, delayed %d", seen, delayed)
	for o, n := range seen {
		if n == 0 && workload.Outcome(o) != workload.Error {
			t.Errorf("no %v in any scenario: the test does not cover it", workload.Outcome(o))
		}
	}
	if delayed == 0 {
		t.Errorf("no limit_req delay in any scenario")
	}
}
