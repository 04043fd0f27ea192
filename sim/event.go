package sim

import "time"

// kind is what an event does when it fires.
type kind uint8

const (
	evArrival        kind = iota // an open-model tenant's next arrival; ref is the tenant
	evSend                       // a closed-model user sends; ref is the user
	evDelayEnd                   // a request's limit_req delay is over; ref is the request
	evEnd                        // a request's job leaves its worker; ref is the request
	evReadTimeout                // the proxy's read timeout of a request; ref is the request
	evClientTimeout              // a request's client gives up; ref is the request
	evSample                     // sample the backend and the busiest keys
	evSYN                        // a dropped connection attempt's SYN is sent again; ref is the request
	evConnectFail                // a dropped connection attempt's kernel gives up (ETIMEDOUT); ref is the request
	evConnectTimeout             // the proxy's connect timeout of a request; ref is the request
	evWake                       // a booting worker is ready
)

// event is one thing due at a model time. Request events carry the
// request's id and are stale unless its ev == seq: instead of removing an
// event from its calendar when a request's plans change, the request
// forgets its seq. An event holds no pointer, so the calendar costs the
// garbage collector nothing and its moves no write barrier.
type event struct {
	at   time.Duration
	seq  uint64 // order of scheduling: breaks ties between equal times
	ref  int32  // what the event is about; see kind
	kind kind
}

func (a *event) before(b *event) bool {
	return a.at < b.at || a.at == b.at && a.seq < b.seq
}
