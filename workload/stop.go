package workload

import (
	"time"

	"stampede/scenarios"
)

// When load starts and stops, and how long a run waits for the requests
// still in flight when it stops: one rule, which both engines follow.

// DefaultDrain bounds the drain when neither the proxy nor some tenant has
// a timeout; see Drain.
const DefaultDrain = 10 * time.Minute

// Stop returns when load stops sending in a run whose load lasts horizon
// (the scenario's Duration): load.End(horizon), load.Stop or horizon when
// Stop is zero, and never past a horizon above zero (the scenario parser
// refuses a stop past the duration; a scenario built by hand may have
// one). Nothing is sent at or after it.
func Stop(load *scenarios.Load, horizon time.Duration) time.Duration {
	end := load.End(horizon)
	if horizon > 0 {
		end = min(end, horizon)
	}
	return end
}

// Drain returns how much model time after sc's Duration the requests of
// tenants (sc's, expanded) still in flight may take to end: the longest of
// the tenants' client timeouts and the proxy's read timeout, and at least
// DefaultDrain when some tenant has neither, which bounds every request
// that limit_req did not delay. Requests still in flight after it are cut
// off and recorded as ClientTimeout.
func Drain(sc *scenarios.Scenario, tenants []scenarios.Tenant) time.Duration {
	drain := time.Duration(0)
	unbounded := false
	read := sc.Proxy.ReadTimeout
	for i := range tenants {
		load := tenants[i].Load
		if load == nil {
			continue
		}
		switch {
		case load.ClientTimeout > 0:
			drain = max(drain, load.ClientTimeout)
		case read <= 0:
			unbounded = true
		}
	}
	if read > 0 {
		drain = max(drain, read)
	}
	if unbounded {
		drain = max(drain, DefaultDrain)
	}
	return drain
}

// Reached returns the model time an interrupted run of a scenario lasting
// duration covered, having got to reached: never past duration, and never
// zero, which a recorder takes for the whole duration.
func Reached(reached, duration time.Duration) time.Duration {
	return max(min(reached, duration), time.Nanosecond)
}
