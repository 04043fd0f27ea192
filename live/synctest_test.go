package live

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"stampede/report"
	"stampede/scenarios"
	"stampede/sim"
)

// These tests play the live engine's whole path (driver, HTTP/1.1 through
// the limiting proxy and the fake backend, probes, sampling) in memory under
// testing/synctest: time is the bubble's fake clock, which moves only when
// every goroutine is durably blocked, so the HTTP path takes no time at all
// and a run gives the same figures on an idle machine and a loaded one. What
// they hold the live engine to is its logic against the simulator's, not the
// machine's speed, which the validity verdict judges in real runs.

// playSynctest plays sc live in a synctest bubble over the in-memory
// transport and returns its results.
func playSynctest(t *testing.T, sc *scenarios.Scenario) *report.Results {
	t.Helper()
	var res *report.Results
	synctest.Test(t, func(t *testing.T) {
		var err error
		res, err = runResults(context.Background(), sc, Options{Transport: Memory, RuntimeTimers: true})
		if err != nil {
			t.Fatalf("live: %v", err)
		}
	})
	return res
}

func playSim(t *testing.T, sc *scenarios.Scenario) *report.Results {
	t.Helper()
	rec := report.NewRecorder(sc)
	st, err := sim.Simulate(context.Background(), sc, rec, sim.Options{Sampler: rec})
	if err != nil {
		t.Fatalf("sim: %v", err)
	}
	return rec.Results(report.RunInfo{Engine: "sim", Backend: st.Backend})
}

// TestSynctestAgreeStockBalance is TestAgreeStockBalance in fake time: the
// story's counts exactly, and every group's p50 and p99 within 1% of the
// simulator's (the engines differ in the order simultaneous requests reach
// the backend, and the live recorder's times are microsecond-rounded).
func TestSynctestAgreeStockBalance(t *testing.T) {
	load := func() *scenarios.Scenario {
		sc, err := scenarios.LoadWith("../scenarios/stock-balance.yaml", append([]string{"time_scale=0.03"}, stockBalanceSets...))
		if err != nil {
			t.Fatal(err)
		}
		return withSharedDraws(sc)
	}
	start := time.Now()
	liveRes := playSynctest(t, load())
	simRes := playSim(t, load())
	t.Logf("live in fake time: %.1f s of wall time", time.Since(start).Seconds())
	if v := liveRes.Validity; v == nil || !v.Conclusive {
		t.Errorf("validity %+v, want conclusive: in fake time the generator is never late", v)
	}
	checkStory(t, liveRes, simRes)
	for _, name := range []string{"user-x", "other-sites"} {
		l, s := group(t, liveRes, name), group(t, simRes, name)
		if l.Requests != s.Requests || l.OK != s.OK {
			t.Errorf("group %s: live %d requests, %d ok; sim %d, %d; want the same", name, l.Requests, l.OK, s.Requests, s.OK)
		}
		for _, q := range []struct {
			name      string
			live, sim float64
		}{{"p50", l.Latency.P50, s.Latency.P50}, {"p99", l.Latency.P99, s.Latency.P99}} {
			if d := relDiff(q.live, q.sim); d > 0.01 {
				t.Errorf("group %s: %s live %.2f ms, sim %.2f ms: %.2f%% apart, want within 1%%", name, q.name, q.live, q.sim, 100*d)
			}
		}
		t.Logf("group %s: p50 live %.2f sim %.2f ms, p99 live %.2f sim %.2f ms", name, l.Latency.P50, s.Latency.P50, l.Latency.P99, s.Latency.P99)
	}
}
