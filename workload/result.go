package workload

import (
	"fmt"
	"time"
)

// Outcome is how one request ended. Every request ends as exactly one
// Outcome; see DESIGN.md "Outcomes".
type Outcome uint8

// The outcomes, in the order results.json lists their counts.
const (
	OK             Outcome = iota // 2xx or 3xx
	Rejected                      // the limiter said no (the limit status, 503 by default)
	BackendError                  // 502: refused by a full backlog, or the worker was killed
	GatewayTimeout                // 504: the proxy's read timeout
	ClientTimeout                 // the client gave up before an answer came
	Dropped                       // an open-model arrival that could not be sent
	Error                         // anything else: transport errors, other statuses
	NumOutcomes                   // the number of outcomes; not an outcome
)

var outcomeNames = [NumOutcomes]string{"ok", "rejected", "backend_errors", "gateway_timeouts", "client_timeouts", "dropped", "errors"}

// String returns the outcome's name as results.json spells its count.
func (o Outcome) String() string {
	if o < NumOutcomes {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// Classify maps an HTTP status to an outcome. rejectStatuses are the statuses
// the limiter answers with (503 by default); a status in that set counts as
// Rejected even when a backend could have sent it, because the scenario knows
// its backend never does.
func Classify(status int, rejectStatuses []int) Outcome {
	for _, s := range rejectStatuses {
		if status == s {
			return Rejected
		}
	}
	switch {
	case status >= 200 && status < 400:
		return OK
	case status == 502:
		return BackendError
	case status == 504:
		return GatewayTimeout
	}
	return Error
}

// Result is one request's end, as an engine reports it. All durations are
// model time: a live engine divides what it measured by the time scale.
// It is 40 bytes and copied by value through the live driver's channel:
// think twice before adding to it.
type Result struct {
	Tenant  int32   // index into the scenario's expanded tenants
	Route   int16   // index into the scenario's backend routes
	Outcome Outcome // how it ended
	// Delayed says limit_req held the request before passing it on; false
	// when it did not, or when the engine cannot know (the live driver:
	// the proxy does not say). It fills what would be padding.
	Delayed bool
	Status  int16 // the HTTP status, 0 when none came back
	// Late is how long after Intended the live driver sent the request,
	// in microseconds of wall time, negative when it sent early; zero
	// from the simulator and for requests never sent. It fills what would
	// be padding.
	Late     int32
	Intended time.Duration // when it was meant to be sent, from the start of the run
	Latency  time.Duration // from Intended to the end (response, error or give-up)

	// Work is the worker time the request used in the backend, model time:
	// how long a worker held it — its service time, the worker timeout when
	// it was killed, or under on_client_abort: cancel the time it ran before
	// its client left. A request whose client left while the backend went on
	// (on_client_abort: continue) counts the work the backend still does for
	// it, though its result is recorded when the client gave up. Zero when
	// it never got a worker, or when the engine cannot know: the live driver
	// reads it from the backend's answer, so there only ok responses carry
	// it; the simulator knows it for every request.
	Work time.Duration
}
