package sim

import (
	"context"
	"testing"
	"time"

	"stampede/limit"
	"stampede/scenarios"
	"stampede/workerpool"
	"stampede/workload"
)

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
