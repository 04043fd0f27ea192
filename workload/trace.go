package workload

import (
	"math/rand/v2"
	"time"

	"stampede/scenarios"
)

// traceState is the part of Arrivals that plays a recorded trace.
type traceState struct {
	at    []scenarios.TraceArrival
	i     int           // the arrival Next returns next
	stop  time.Duration // no arrival at or after this
	route int           // the route of the arrival Next returned last; -1 before
}

// ResetTrace makes a yield the arrivals of trace (in time order, as
// scenarios reads it) from start until before stop, each with the route
// Route then reports, in place of a rate's. It draws nothing.
func (a *Arrivals) ResetTrace(trace []scenarios.TraceArrival, start, stop time.Duration) {
	*a = Arrivals{trace: &traceState{at: trace, stop: stop, route: -1}}
	for a.trace.i < len(trace) && trace[a.trace.i].At < start {
		a.trace.i++
	}
}

// nextTraced is Next for a trace.
func (a *Arrivals) nextTraced() (time.Duration, bool) {
	t := a.trace
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
	if a.trace == nil || a.trace.route < 0 {
		return 0, false
	}
	return a.trace.route, true
}

// RouteOf returns the route of the arrival Next returned last: the trace's
// when the arrivals are a trace, else one m picks from rng.
func (a *Arrivals) RouteOf(m Mix, rng *rand.Rand) int {
	if r, ok := a.Route(); ok {
		return r
	}
	return m.Pick(rng)
}
