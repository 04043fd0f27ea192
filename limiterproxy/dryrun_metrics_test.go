package limiterproxy

import (
	"testing"

	"stampede/limit"
)

// TestDryRunMetricsHoldNothing: a request a dry-run limit_conn would reject
// holds no slot of the dry-run limits, so the metrics must not count it in
// flight or passed for them but as the dry-run rule's rejected_dry_run; the
// enforced limit beside it counts it as it would without the dry-run one.
func TestDryRunMetricsHoldNothing(t *testing.T) {
	g := newGate(4)
	st := newStack(t, limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 1, DryRun: true}, {Key: "$host", PerKey: 5}}}, g, ProxyOptions{})
	defer st.close()
	defer g.open()

	c := sendAll(st.front.Client(), st.front.URL, repeat("site1", 2))
	g.await(t, 2)
	if got := st.policy.Conn[1].Limiter.InFlight("site1"); got != 2 {
		t.Fatalf("limit_conn[1] holds %d slots for site1, want 2 (the dry-run limit changes nothing)", got)
	}
	checkSeries(t, st.metrics, "while held",
		series{"stampede_limit_in_flight", "limit_conn[0]", 1},
		series{"stampede_limit_in_flight", "limit_conn[1]", 2},
		series{"stampede_limit_passed_total", "limit_conn[1]", 2},
		series{"stampede_limit_rejected_dry_run_total", "limit_conn[0]", 1})
	g.open()
	receiveOK(t, c, 2, "dry-run admitted")
	st.close()
	checkSeries(t, st.metrics, "after",
		series{"stampede_limit_in_flight", "limit_conn[0]", 0},
		series{"stampede_limit_in_flight", "limit_conn[1]", 0})
}
