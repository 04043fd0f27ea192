package workload

import (
	"time"

	"stampede/scenarios"
)

// The closed model's rule for when a user sends again, which the live
// driver and the simulator both follow so that they cannot drift apart.

// MinResend is the least a closed-model user waits, whatever its think
// time, before sending again after an answer that was not ok (a rejection,
// a 502 or 504, an error, a client timeout): a person reloading the page
// after an error page. 250 ms is about a human's reaction time, and the
// least a browser tab takes to be reloaded by hand; browsers do not
// resend on their own after a 503. Without it, a user with think: 0s whose
// requests are rejected at once would resend at the same model instant
// forever, and the simulator would never leave that instant.
const MinResend = 250 * time.Millisecond

// MinCycle is the least model time between two sends of one closed-model
// user, even after ok answers. It matters only when think time and service
// time are both about zero, where it keeps model time moving, and it caps
// such a user at 2,000 requests a model second. It is not the fastest a
// real client cycles: one connection to nginx's `return 200` over
// loopback answers and is sent again in about 40 µs, and wrk's 64
// connections each cycle in about 340 µs at 188k requests a second; so
// 64 users at time scale 1 can go as fast as 128k requests a second,
// above half of wrk's rate. It goes no lower because each zero-time
// cycle is events the simulator plays: sim's livelock test holds three
// such users for two minutes under 2M events, and they take 1.92M.
const MinCycle = 500 * time.Microsecond

// NextSend returns when a closed-model user whose request was meant for
// intended and ended at end with outcome o sends its next one, given its
// think time: end plus think, or MinResend when o is not OK and think is
// shorter, and never sooner than MinCycle after intended.
func NextSend(intended, end, think time.Duration, o Outcome) time.Duration {
	wait := max(think, 0)
	if o != OK {
		wait = max(wait, MinResend)
	}
	return max(end+wait, intended+MinCycle)
}

// Closed is the loop of a closed-model tenant's users: request, answer or
// client timeout, think, again, from Load.Start until the tenant's stop or
// Load.Iterations. The zero Closed is not ready; use NewClosed. A Closed is
// immutable and safe for concurrent use; each user keeps its own count of
// iterations done.
type Closed struct {
	load *scenarios.Load
	stop time.Duration
}

// NewClosed returns the loop of load (Closed model) in a run whose load
// lasts horizon.
func NewClosed(load *scenarios.Load, horizon time.Duration) Closed {
	return Closed{load: load, stop: Stop(load, horizon)}
}

// First returns when a user sends its first request, or false when it
// sends none.
func (c Closed) First() (time.Duration, bool) {
	if c.load.Start >= c.stop || c.load.Iterations < 0 {
		return 0, false
	}
	return max(c.load.Start, 0), true
}

// Next returns when a user whose request meant for intended ended at end
// with outcome o sends its next one (NextSend), or false when it stops. A
// client timeout under GiveUp ends the user, and under Retry sends again
// (a refreshed tab: the same iteration); any other outcome completes one of
// the user's iterations, which done counts. The user stops after
// Load.Iterations (zero: no bound) and at the tenant's stop.
func (c Closed) Next(done *int, intended, end time.Duration, o Outcome) (time.Duration, bool) {
	if o == ClientTimeout {
		if c.load.OnTimeout == scenarios.GiveUp {
			return 0, false
		}
	} else {
		*done++
	}
	if c.load.Iterations > 0 && *done >= c.load.Iterations {
		return 0, false
	}
	at := NextSend(intended, end, c.load.Think, o)
	return at, at < c.stop
}
