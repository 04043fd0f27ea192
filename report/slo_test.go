package report

import (
	"math"
	"testing"

	"stampede/scenarios"
)

func TestEvaluateSLOs(t *testing.T) {
	groups := []GroupResult{
		{Name: "sites", Tenants: 249, Counts: Counts{Requests: 1000, OK: 950, Rejected: 20, BackendErrors: 5, GatewayTimeouts: 10, ClientTimeouts: 8, Dropped: 4, Errors: 3},
			Latency: Latency{Count: 950, Min: 1, Mean: 40, P50: 30, P90: 80, P95: 120, P99: 212.5, P999: 900, Max: 1500}},
		{Name: "idle", Tenants: 3},
		{Name: "refused", Tenants: 1, Counts: Counts{Requests: 8, Rejected: 8}},
	}
	slo := func(g, metric, op string, th float64) scenarios.SLO {
		return scenarios.SLO{Group: g, Metric: metric, Op: op, Threshold: th, Text: metric + " " + op + " x"}
	}
	cases := []struct {
		s      scenarios.SLO
		pass   bool
		value  float64
		reason string
	}{
		{slo("sites", "p50", "<", 31), true, 30, ""},
		{slo("sites", "p90", "<", 80), false, 80, ""},
		{slo("sites", "p90", "<=", 80), true, 80, ""},
		{slo("sites", "p95", ">", 100), true, 120, ""},
		{slo("sites", "p99", "<", 1000), true, 212.5, ""},
		{slo("sites", "p999", ">=", 901), false, 900, ""},
		{slo("sites", "max", "<", 1000), false, 1500, ""},
		{slo("sites", "mean", "<", 50), true, 40, ""},
		{slo("sites", "ok_rate", ">", 0.99), false, 0.95, ""},
		{slo("sites", "ok_rate", ">=", 0.95), true, 0.95, ""},
		{slo("sites", "rejected_rate", "<", 0.05), true, 0.02, ""},
		{slo("sites", "error_rate", "<=", 0.018), true, 0.018, ""},   // (5+10+3)/1000
		{slo("sites", "timeout_rate", "<", 0.018), false, 0.018, ""}, // (8+10)/1000
		{slo("idle", "ok_rate", ">=", 0), false, 0, ReasonNoRequests},
		{slo("idle", "rejected_rate", "<", 1), false, 0, ReasonNoRequests},
		{slo("idle", "p99", "<", 1000), false, 0, ReasonNoRequests},
		{slo("refused", "p99", "<", 1000), false, 0, ReasonNoOK},
		{slo("refused", "rejected_rate", "<=", 1), true, 1, ""},
		{slo("nobody", "p99", "<", 1000), false, 0, ReasonNoGroup},
		{slo("sites", "p42", "<", 1000), false, 0, ReasonBadMetric},
		{slo("sites", "p50", "=~", 1000), false, 30, ReasonBadOp},
	}
	for i, c := range cases {
		got := EvaluateSLOs([]scenarios.SLO{c.s}, groups)[0]
		if got.Pass != c.pass || got.Value != c.value || got.Reason != c.reason || got.Threshold != c.s.Threshold {
			t.Errorf("step %d: %s %s %s %v on %s = pass %v value %v reason %q, want pass %v value %v reason %q",
				i, c.s.Metric, c.s.Op, "", c.s.Threshold, c.s.Group, got.Pass, got.Value, got.Reason, c.pass, c.value, c.reason)
		}
		if want := c.s.Group + ": " + c.s.Text; got.Name != want {
			t.Errorf("step %d: name %q, want %q", i, got.Name, want)
		}
		if back := sloOf(got); back != c.s {
			t.Errorf("step %d: rebuilt objective %+v, want %+v", i, back, c.s)
		}
	}
}

func TestSLOMiss(t *testing.T) {
	cases := []struct {
		r    SLOResult
		want float64
	}{
		{SLOResult{Pass: true, Op: "<", Value: 5, Threshold: 10}, 0},
		{SLOResult{Op: "<", Value: 1200, Threshold: 1000}, 0.2},
		{SLOResult{Op: ">", Value: 0.9, Threshold: 0.99}, (0.99 - 0.9) / 0.99},
		{SLOResult{Op: "<=", Value: 0.5, Threshold: 0}, 0.5},
		{SLOResult{Op: "<", Reason: ReasonNoRequests}, math.Inf(1)},
	}
	for i, c := range cases {
		if got := c.r.Miss(); math.Abs(got-c.want) > 1e-12 && !(math.IsInf(got, 1) && math.IsInf(c.want, 1)) {
			t.Errorf("step %d: Miss() = %v, want %v", i, got, c.want)
		}
	}
}
