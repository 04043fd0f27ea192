package workload

import "time"

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
// user, even after ok answers: no client receives an answer and sends its
// next request in less (a loopback round trip through a proxy alone takes
// about that much). It matters only when think time and service time are
// both about zero, where it keeps model time moving.
const MinCycle = time.Millisecond

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
