package live

import (
	"strings"
	"testing"
	"time"

	"stampede/loadgen"
	"stampede/report"
	"stampede/scenarios"
	"stampede/workload"
)

// TestJudge holds the validity rule to its figures, step by step: the
// delay budget is a tenth of the tightest latency SLO in model time, and
// each of the run's own delays, divided by the time scale, is set against
// it.
func TestJudge(t *testing.T) {
	sc := &scenarios.Scenario{
		Duration: 10 * time.Minute,
		SLO: []scenarios.SLO{
			{Group: "g", Metric: "p99", Op: "<", Threshold: 1000},
			{Group: "g", Metric: "ok_rate", Op: ">", Threshold: 0.99},
		},
		Proxy:   scenarios.Proxy{ReadTimeout: 300 * time.Second},
		Tenants: []scenarios.TenantGroup{{Group: "g", Load: scenarios.Load{ClientTimeout: 2 * time.Minute}}},
	}
	if got := DelayBudget(sc); got != 100*time.Millisecond {
		t.Fatalf("DelayBudget = %v, want 100ms (a tenth of p99 < 1s)", got)
	}
	const scale = 0.03 // 100 ms of model time is 3 ms of wall time
	// Every precise timer woke 4.1-8.2 ms late (clock.Wakes's bucket 13,
	// counted as 6.1 ms).
	var timersLate measured
	timersLate.wakes.Buckets[13] = 100
	stalls := func(n int, each time.Duration) loadgen.Stalls {
		var s loadgen.Stalls
		for range n {
			s.Add(each)
		}
		return s
	}
	for _, c := range []struct {
		step       string
		m          measured
		conclusive bool
		reason     string  // in the reasons when inconclusive
		suggest    float64 // suggested time scale
	}{
		{"nothing late", measured{}, true, "", scale},
		{"lateness p99 under the budget", measured{lateness: workload.Lateness{P99: 2900 * time.Microsecond}}, true, "", scale},
		{"lateness p99 over the budget", measured{lateness: workload.Lateness{P99: 4 * time.Millisecond}}, false, "late at p99", 0.1},
		{"one long stall: 0.1% of the run", measured{stalls: stalls(1, 18*time.Millisecond)}, true, "", scale},
		{"long stalls over 0.5% of the run", measured{stalls: stalls(10, 10*time.Millisecond)}, false, "stalled 10 times", 0.2},
		{"timers late", timersLate, false, "timers", 0.2},
		{"tare drift", measured{tare: true, tareMin: time.Millisecond, tareMax: 5 * time.Millisecond}, false, "drifted", 0.1},
	} {
		c.m.scale = scale
		v := judge(sc, c.m)
		if v.Conclusive != c.conclusive || v.SuggestedTimeScale != c.suggest {
			t.Errorf("step %s: conclusive %v, suggested %g; want %v, %g (%v)", c.step, v.Conclusive, v.SuggestedTimeScale, c.conclusive, c.suggest, v.Reasons)
		}
		if !c.conclusive && !strings.Contains(strings.Join(v.Reasons, "; "), c.reason) {
			t.Errorf("step %s: reasons %q, want one saying %q", c.step, v.Reasons, c.reason)
		}
	}

	// A failure far beyond what the delay could explain still fails.
	m := measured{scale: scale, lateness: workload.Lateness{P99: 6 * time.Millisecond}} // 200 ms of model time
	for _, c := range []struct {
		step        string
		slo         report.SLOResult
		unexplained bool
	}{
		{"p99 missed by less than 10×", report.SLOResult{Name: "p99", Metric: "p99", Op: "<", Threshold: 1000, Value: 2900}, false},
		{"p99 missed by more than 10×", report.SLOResult{Name: "p99", Metric: "p99", Op: "<", Threshold: 1000, Value: 3.2 * 60_000}, true},
		{"ok_rate with a delay under a tenth of the shortest timeout", report.SLOResult{Name: "ok", Metric: "ok_rate", Op: ">", Threshold: 0.99, Value: 0.6}, true},
	} {
		v := judge(sc, m)
		explain(v, []report.SLOResult{c.slo}, sc, worstDelay(v))
		if got := len(v.Unexplained) > 0; got != c.unexplained {
			t.Errorf("step %s: unexplained %v, want %v", c.step, v.Unexplained, c.unexplained)
		}
	}
}
