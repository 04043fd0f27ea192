package sim

import (
	"math"
	"testing"
	"time"

	"stampede/scenarios"
	"stampede/workerpool"
	"stampede/workload"
)

// ErlangB returns the share of arrivals blocked when Poisson traffic of a
// erlangs (arrival rate × mean holding time) is offered to n servers
// without a queue: B(a, n) = (aⁿ/n!) / Σₖ₌₀ⁿ aᵏ/k!. It holds for any holding
// time distribution, which is why it describes limit_conn in front of a
// backend with workers to spare. It computes the stable recursion
// B(a, k) = a·B(a, k−1) / (k + a·B(a, k−1)).
func ErlangB(a float64, n int) float64 {
	b := 1.0
	for k := 1; k <= n; k++ {
		b = a * b / (float64(k) + a*b)
	}
	return b
}

// ErlangC returns the probability that an arrival waits when Poisson traffic
// of a erlangs is offered to c servers with an unbounded FIFO queue and
// exponential service: C(a, c) = c·B / (c − a·(1 − B)) with B = ErlangB(a,
// c). It returns 1 when a ≥ c (the queue grows without bound).
func ErlangC(a float64, c int) float64 {
	if a >= float64(c) {
		return 1
	}
	b := ErlangB(a, c)
	return float64(c) * b / (float64(c) - a*(1-b))
}

// ErlangCWait returns the mean time an arrival waits in the queue of an
// M/M/c system with arrival rate lambda (per second) and mean service time
// s: C(a, c) · s / (c − a) with a = lambda·s. It returns an infinite
// duration's stand-in (the largest Duration) when a ≥ c.
func ErlangCWait(lambda float64, s time.Duration, c int) time.Duration {
	a := lambda * s.Seconds()
	if a >= float64(c) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ErlangC(a, c) * float64(s) / (float64(c) - a))
}

// erlangScenario is one Poisson tenant at lambda/s on a route of service
// dist, for model time d, without a limit.
func erlangScenario(lambda float64, dist workerpool.Dist, workers int, d time.Duration) *scenarios.Scenario {
	sc := one(dist, scenarios.Load{Model: scenarios.Open, Arrivals: scenarios.Poisson, Rate: lambda, MaxInFlight: 1 << 30},
		scenarios.Backend{Workers: workers})
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
		st := mustRun(t, connLimit(erlangScenario(lambda, dist, 1000, time.Hour), "$host", limit), nil, Options{})
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
	st := mustRun(t, erlangScenario(lambda, workerpool.Exp{Avg: mean}, workers, 10*time.Hour), nil, Options{})
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
