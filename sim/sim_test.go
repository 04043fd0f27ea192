package sim

import (
	"context"
	"testing"
	"time"

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

// one is a scenario with one tenant of one route and no limit.
func one(service workerpool.Dist, load scenarios.Load, backend scenarios.Backend) *scenarios.Scenario {
	backend.Routes = []scenarios.Route{{Name: "r", Path: "/", Service: service}}
	load.Routes = []scenarios.WeightedRoute{{Route: 0, Weight: 1}}
	return &scenarios.Scenario{
		Name:     "one",
		Duration: time.Minute,
		Seed:     1,
		Backend:  backend,
		Tenants:  []scenarios.TenantGroup{{Group: "t", Count: 1, Host: "t.example.com", Load: load}},
	}
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
	killed := one(workerpool.Constant{D: 10 * sec}, closed(1, 0), scenarios.Backend{Workers: 1, Timeout: 2 * sec})
	for _, tc := range []struct {
		name    string
		sc      *scenarios.Scenario
		want    []want
		samples []sample // backend state at sample times
	}{
		{
			name: "ok",
			sc:   one(workerpool.Constant{D: 2 * sec}, closed(1, 0), scenarios.Backend{Workers: 1}),
			want: []want{{workload.OK, 200, 2 * sec}},
		},
		{
			name:    "client timeout, worker goes on",
			sc:      one(workerpool.Constant{D: 10 * sec}, closed(1, 3*sec), scenarios.Backend{Workers: 1}),
			want:    []want{{workload.ClientTimeout, 0, 3 * sec}},
			samples: []sample{{5 * sec, 1, 0}, {9 * sec, 1, 0}, {10 * sec, 0, 0}},
		},
		{
			name:    "client timeout, worker cancelled",
			sc:      one(workerpool.Constant{D: 10 * sec}, closed(1, 3*sec), scenarios.Backend{Workers: 1, OnClientAbort: workerpool.Cancel}),
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
			sc:   one(workerpool.Constant{D: 1 * sec}, closed(4, 0), scenarios.Backend{Workers: 1, Backlog: 1, Overflow: workerpool.Reset}),
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
			sc:   one(workerpool.Constant{D: 1 * sec}, closed(4, 0), scenarios.Backend{Workers: 1, Backlog: 1}),
			want: []want{
				{workload.OK, 200, 1 * sec},
				{workload.OK, 200, 2 * sec},
				{workload.OK, 200, 3 * sec},
				{workload.OK, 200, 4 * sec},
			},
		},
		{
			name: "limit_conn",
			sc:   connLimit(one(workerpool.Constant{D: 1 * sec}, closed(3, 0), scenarios.Backend{Workers: 8}), "$host", 2),
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
		scenarios.Backend{Workers: 1})
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
	sc := connLimit(one(workerpool.Constant{D: 10 * time.Second},
		scenarios.Load{Model: scenarios.Closed, Users: 1, Iterations: 1, ClientTimeout: 3 * time.Second, OnTimeout: scenarios.Retry},
		scenarios.Backend{Workers: 1}), "$host", 1)
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

func TestDropped(t *testing.T) {
	sc := one(workerpool.Constant{D: time.Hour},
		scenarios.Load{Model: scenarios.Open, Arrivals: scenarios.Constant, Rate: 1, MaxInFlight: 3, ClientTimeout: 20 * time.Second},
		scenarios.Backend{Workers: 100})
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
		scenarios.Backend{Workers: 1})
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
	sc := one(workerpool.Exp{Avg: time.Millisecond}, scenarios.Load{Rate: 1000}, scenarios.Backend{Workers: 4})
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
