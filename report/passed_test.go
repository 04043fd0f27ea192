package report

import (
	"strings"
	"testing"
	"time"

	"stampede/limit"
	"stampede/workload"
)

// TestPassedByLimitReq: under limit_req the recorder counts, per tenant and
// by their intended send, the requests it let through and those it delayed
// first, and the keys chart draws them.
func TestPassedByLimitReq(t *testing.T) {
	sc := recScenario()
	sc.Proxy.Limits = limit.Config{Req: []limit.ReqSpec{{Key: "$host", Rate: "2r/s", Burst: 5}}}
	r := NewRecorder(sc)
	for i := 0; i < 10; i++ {
		// user-x (tenant 3): ten at 1 s, the last eight delayed by i×0.5 s.
		d := time.Duration(max(0, i-1)) * 500 * time.Millisecond
		r.Add(&workload.Result{Tenant: 3, Outcome: workload.OK, Status: 200, Intended: time.Second, Latency: d + 10*time.Millisecond, Delayed: d > 0})
	}
	r.Add(&workload.Result{Tenant: 0, Outcome: workload.OK, Status: 200, Intended: 2 * time.Second, Latency: 5 * time.Millisecond})
	r.Add(&workload.Result{Tenant: 0, Outcome: workload.Rejected, Status: 503, Intended: 2 * time.Second, Latency: time.Millisecond})
	res := r.Results(RunInfo{Engine: "sim"})
	if len(res.passed) != 2 || res.passed[0].host != "x.example.com" {
		t.Fatalf("passed series %+v: want user-x's first, then site 1's", res.passed)
	}
	x, site := res.passed[0], res.passed[1]
	sum := func(vs []float64) (s float64) {
		for _, v := range vs {
			s += v
		}
		return s * res.Series.Step
	}
	if got := sum(x.passed); got != 10 {
		t.Errorf("user-x passed on %v requests, want 10", got)
	}
	if got := sum(x.delayed); got != 8 || x.delayedTotal != 8 {
		t.Errorf("user-x delayed %v (total %d), want 8", got, x.delayedTotal)
	}
	if got := sum(site.passed); got != 1 { // the rejection is not passed on
		t.Errorf("site 1 passed on %v requests, want 1", got)
	}
	if got := keysTitle(res); !strings.Contains(got, "limit_req") {
		t.Errorf("keys chart title %q: want it to name limit_req", got)
	}
	checkPNG(t, pngChart(t, res, "keys"), 4, 0.01)
}
