package workload

import (
	"time"

	"stampede/scenarios"
)

// traceState is the part of Arrivals that plays a recorded trace.
type traceState struct {
	on    bool
	at    []scenarios.TraceArrival
	i     int           // the arrival Next returns next
	stop  time.Duration // no arrival at or after this
	route int           // the route of the arrival Next returned last; -1 before
}

// ResetTrace makes a yield the arrivals of trace (in time order, as
// scenarios reads it) from start until before stop, each with the route
// Route then reports, in place of a rate's. It draws nothing.
func (a *Arrivals) ResetTrace(trace []scenarios.TraceArrival, start, stop time.Duration) {
	*a = Arrivals{trace: traceState{on: true, at: trace, stop: stop, route: -1}}
	for a.trace.i < len(trace) && trace[a.trace.i].At < start {
		a.trace.i++
	}
}

// nextTraced is Next for a trace.
func (a *Arrivals) nextTraced() (time.Duration, bool) {
	t := &a.trace
	if t.i >= len(t.at) || t.at[t.i].At >= t.stop {
		return 0, false
	}
	x := t.at[t.i]
	t.i++
	t.route = int(x.Route)
	return x.At, true
}

// Route returns the route of the arrival Next returned last, when the
// arrivals are a trace (ResetTrace); false otherwise, when a Mix picks it.
func (a *Arrivals) Route() (int, bool) {
	if !a.trace.on || a.trace.route < 0 {
		return 0, false
	}
	return a.trace.route, true
}
