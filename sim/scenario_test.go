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
		connLimit(sc, "$host", limit)
	}
	return sc
}

// connLimit returns sc with one limit_conn of n per key as its limits.
func connLimit(sc *scenarios.Scenario, key string, n int) *scenarios.Scenario {
	sc.Proxy.Limits = limit.Config{Conn: []limit.ConnSpec{{Key: key, PerKey: n}}}
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
	goesOnKilled := one(workerpool.Constant{D: 10 * sec}, closed(1, 3*sec), scenarios.Backend{Workers: 1, Timeout: 5 * sec})
	killed := one(workerpool.Constant{D: 10 * sec}, closed(1, 0), scenarios.Backend{Workers: 1, Timeout: 2 * sec})
	for _, tc := range []struct {
		name string
		sc   *scenarios.Scenario
		work []time.Duration // per result, in the order they come
	}{
		{"ok", one(workerpool.Constant{D: 2 * sec}, closed(1, 0), scenarios.Backend{Workers: 1}), []time.Duration{2 * sec}},
		// The result is out at 3 s, but the worker goes on to 10 s.
		{"client timeout, worker goes on", one(workerpool.Constant{D: 10 * sec}, closed(1, 3*sec), scenarios.Backend{Workers: 1}), []time.Duration{10 * sec}},
		{"client timeout, worker goes on to be killed", goesOnKilled, []time.Duration{killAt(t, goesOnKilled, 0)}},
		{"client timeout, worker cancelled", one(workerpool.Constant{D: 10 * sec}, closed(1, 3*sec), cancel), []time.Duration{3 * sec}},
		{"worker killed", killed, []time.Duration{killAt(t, killed, 0)}},
		{"backlog full", one(workerpool.Constant{D: sec}, closed(4, 0), scenarios.Backend{Workers: 1, Backlog: 1, Overflow: workerpool.Reset}), []time.Duration{0, sec, sec, sec}},
		{"limit_conn", connLimit(one(workerpool.Constant{D: sec}, closed(3, 0), scenarios.Backend{Workers: 8}), "$host", 2), []time.Duration{0, sec, sec}},
		// The second waits 4 s, the proxy gives up at 6 s; under continue
		// it still runs 4 s once the first is done.
		{"abandoned in the backlog, continue", readTimeout(one(workerpool.Constant{D: 4 * sec}, closed(2, 0), scenarios.Backend{Workers: 1}), 6*sec), []time.Duration{4 * sec, 4 * sec}},
		// Under cancel it leaves the backlog having used no worker, and
		// the first, abandoned while running, used the 6 s it ran.
		{"abandoned in the backlog, cancel", readTimeout(one(workerpool.Constant{D: 8 * sec}, closed(2, 0), cancel), 6*sec), []time.Duration{6 * sec, 0}},
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

func TestLimitReqDelay(t *testing.T) {
	// rate=5r/s burst=12 delay=8, 14 at once: 1–9 at once, 10–13 delayed
	// 200/400/600/800 ms, 14 rejected (DESIGN.md).
	sc := one(workerpool.Constant{D: 0},
		scenarios.Load{Model: scenarios.Closed, Users: 14, Iterations: 1},
		scenarios.Backend{Workers: 100})
	sc.Proxy.Limits = limit.Config{Req: []limit.ReqSpec{{Key: "$host", Rate: "5r/s", Burst: 12, Delay: 8}}}
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
		scenarios.Backend{Workers: 10})
	sc.Proxy.Limits = limit.Config{
		Req:  []limit.ReqSpec{{Key: "$host", Rate: "1r/s", Burst: 5}},
		Conn: []limit.ConnSpec{{Key: "$host", PerKey: 1}},
	}
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
		scenarios.Backend{Workers: 1})
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
