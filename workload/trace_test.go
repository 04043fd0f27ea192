package workload

import (
	"testing"
	"time"

	"stampede/scenarios"
)

func TestTraceArrivals(t *testing.T) {
	s := time.Second
	trace := []scenarios.TraceArrival{{At: s / 2, Route: 1}, {At: s, Route: 0}, {At: 2 * s, Route: 2}, {At: 3 * s, Route: 1}}
	var a Arrivals
	a.ResetTrace(trace, s, 3*s)
	if _, ok := a.Route(); ok {
		t.Errorf("before Next: Route reports a route, want none")
	}
	want := []scenarios.TraceArrival{{At: s, Route: 0}, {At: 2 * s, Route: 2}}
	for i, w := range want {
		at, ok := a.Next()
		r, rok := a.Route()
		if !ok || !rok || at != w.At || r != int(w.Route) {
			t.Fatalf("step %d: Next = %v, %v; Route = %d, %v; want %v, true; %d, true", i, at, ok, r, rok, w.At, w.Route)
		}
	}
	if at, ok := a.Next(); ok {
		t.Errorf("after the stop: Next = %v, true; want false", at)
	}
	// Reset for a rate drops the trace.
	a.Reset(&scenarios.Load{Rate: 1}, 10*s, TenantRand(1, 0))
	if _, ok := a.Next(); !ok {
		t.Fatal("after Reset: no arrival")
	}
	if _, ok := a.Route(); ok {
		t.Error("after Reset: Route reports a trace route")
	}
}
