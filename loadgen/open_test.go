package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"stampede/scenarios"
	"stampede/workload"
)

func TestDriverOpenSendsEveryArrival(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	loads := []*scenarios.Load{
		{Model: scenarios.Open, Arrivals: scenarios.Constant, Rate: 50, Routes: []scenarios.WeightedRoute{{Route: 0, Weight: 1}, {Route: 1, Weight: 1}}},
		{Model: scenarios.Open, Arrivals: scenarios.Poisson, Rate: 30, Start: 200 * time.Millisecond, Routes: []scenarios.WeightedRoute{{Route: 1, Weight: 1}}},
	}
	tenants := []scenarios.Tenant{{Index: 0, Name: "p", Host: "p", Load: loads[0]}, {Index: 1, Name: "q", Host: "q", Load: loads[1]}}
	const seed = 7
	d := newDriver(t, srv.URL, DriverOptions{Tenants: tenants, Horizon: time.Second, TimeScale: 0.2, Seed: seed})
	var sink resultSink
	if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
		t.Fatal(err)
	}
	per := [2]int{}
	var last [2]time.Duration
	for _, r := range sink.got {
		if r.Outcome != workload.OK {
			t.Errorf("result %+v: want ok", r)
		}
		per[r.Tenant]++
		last[r.Tenant] = max(last[r.Tenant], r.Intended)
		if r.Tenant == 1 && (r.Route != 1 || r.Intended < 200*time.Millisecond) {
			t.Errorf("tenant q: got route %d at %v, want route 1 from 200ms", r.Route, r.Intended)
		}
	}
	for i, l := range loads {
		if want := arrivalsOf(l, time.Second, seed, i); per[i] != want || want == 0 {
			t.Errorf("tenant %d: got %d results, want %d (its arrivals)", i, per[i], want)
		}
		if last[i] >= time.Second {
			t.Errorf("tenant %d: an arrival at %v, past the horizon", i, last[i])
		}
	}
}

// TestDriverDropsOverCaps holds the open model to its in-flight caps, a
// tenant's (Load.MaxInFlight) and the driver's (DriverOptions.MaxInFlight):
// against a server that holds every request, every arrival past the cap is
// dropped, and every arrival is recorded.
func TestDriverDropsOverCaps(t *testing.T) {
	one := []scenarios.WeightedRoute{{Route: 0, Weight: 1}}
	capped := &scenarios.Load{Model: scenarios.Open, Arrivals: scenarios.Constant, Rate: 100, MaxInFlight: 2, Routes: one}
	shared := &scenarios.Load{Model: scenarios.Open, Arrivals: scenarios.Constant, Rate: 40, Routes: one}
	for _, c := range []struct {
		name        string
		tenants     []scenarios.Tenant
		maxInFlight int // DriverOptions.MaxInFlight
		cap         int // requests let through
	}{
		{"tenant cap", []scenarios.Tenant{{Name: "x", Host: "x", Load: capped}}, 0, 2},
		{"driver cap", []scenarios.Tenant{{Index: 0, Name: "a", Host: "a", Load: shared}, {Index: 1, Name: "b", Host: "b", Load: shared}}, 3, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}))
			defer srv.Close()
			defer srv.CloseClientConnections()
			n := 0
			for _, tn := range c.tenants {
				n += arrivalsOf(tn.Load, time.Second, 1, tn.Index)
			}
			d := newDriver(t, srv.URL, DriverOptions{Tenants: c.tenants, Horizon: time.Second, TimeScale: 0.2, Seed: 1, MaxInFlight: c.maxInFlight})
			sink := resultSink{}
			dropped := 0
			sink.onAdd = func(r *workload.Result) {
				// Once every arrival but those in flight is dropped, let
				// those finish: the run then ends without a timeout.
				if r.Outcome == workload.Dropped {
					if dropped++; dropped == n-c.cap {
						close(release)
					}
				}
			}
			if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
				t.Fatal(err)
			}
			if got, want := sink.count(workload.Dropped), n-c.cap; got != want {
				t.Errorf("dropped: got %d, want %d", got, want)
			}
			if got := sink.count(workload.OK); got != c.cap {
				t.Errorf("ok: got %d, want %d", got, c.cap)
			}
			if got := len(sink.got); got != n {
				t.Errorf("results: got %d, want %d: every arrival recorded", got, n)
			}
		})
	}
}

// BenchmarkDriverOpen measures the open model's cost: constant arrivals at
// STAMPEDE_BENCH_RATE a second (default 20,000) with precise timers, b.N
// of them, against the endpoint of benchTarget, as bench/loadgen.sh plays
// them against nginx. It reports the process's CPU time per arrival (the
// in-process endpoint's included when there is no target), the send
// lateness p99, the arrivals dropped and the requests sent that were not
// answered ok.
func BenchmarkDriverOpen(b *testing.B) {
	target := benchTarget(b)
	rate := 20000.0
	if s := os.Getenv("STAMPEDE_BENCH_RATE"); s != "" {
		var err error
		if rate, err = strconv.ParseFloat(s, 64); err != nil || rate <= 0 {
			b.Fatalf("STAMPEDE_BENCH_RATE %q: want a rate a second, e.g. 20000", s)
		}
	}
	horizon := time.Duration(float64(b.N) / rate * float64(time.Second))
	load := &scenarios.Load{Model: scenarios.Open, Arrivals: scenarios.Constant, Rate: rate, ClientTimeout: 2 * time.Second, Routes: []scenarios.WeightedRoute{{Route: 0, Weight: 1}}}
	d, err := NewDriver(DriverOptions{
		Target:        target,
		PreciseTimers: true,
		Routes:        []scenarios.Route{{Name: "hello", Path: "/"}},
		Tenants:       []scenarios.Tenant{{Name: "bench", Host: "bench.example.com", Load: load}},
		Horizon:       horizon,
		TimeScale:     1,
	})
	if err != nil {
		b.Fatal(err)
	}
	var outcomes [workload.NumOutcomes]int
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	if err := d.Run(context.Background(), time.Now(), workload.SinkFunc(func(r *workload.Result) { outcomes[r.Outcome]++ })); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	n := 0
	for _, k := range outcomes {
		n += k
	}
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(time.Microsecond)/float64(max(n, 1)), "cpu-µs/arrival")
	b.ReportMetric(float64(d.SendLateness().P99)/float64(time.Millisecond), "late-p99-ms")
	b.ReportMetric(float64(outcomes[workload.Dropped]), "dropped")
	// An overloaded generator times out, which the figures must show
	// rather than fail on.
	b.ReportMetric(float64(n-outcomes[workload.OK]-outcomes[workload.Dropped]), "not-ok")
}
