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
// event from the heap when a request's plans change, the request forgets
// its seq. An event holds no pointer, so the heap costs the garbage
// collector nothing and its moves no write barrier.
type event struct {
	at   time.Duration
	seq  uint64 // order of scheduling: breaks ties between equal times
	ref  int32  // what the event is about; see kind
	kind kind
}

func (a *event) before(b *event) bool {
	return a.at < b.at || a.at == b.at && a.seq < b.seq
}

// eventHeap is a 4-ary min-heap of events by (at, seq), typed to avoid the
// interface boxing of container/heap. A 4-ary heap halves the depth of a
// binary one and keeps the children of a node in one or two cache lines.
type eventHeap struct {
	ev []event
}

func (h *eventHeap) len() int { return len(h.ev) }

func (h *eventHeap) push(e event) {
	h.ev = append(h.ev, e)
	ev := h.ev
	i := len(ev) - 1
	for i > 0 {
		p := (i - 1) / arity
		if !e.before(&ev[p]) {
			break
		}
		ev[i] = ev[p]
		i = p
	}
	ev[i] = e
}

// pop removes and returns the earliest event. The heap must not be empty.
func (h *eventHeap) pop() event {
	ev := h.ev
	top := ev[0]
	n := len(ev) - 1
	last := ev[n]
	h.ev = ev[:n]
	if n > 0 {
		h.down(last)
	}
	return top
}

// down puts e at the root and sifts it down.
func (h *eventHeap) down(last event) {
	ev := h.ev
	n := len(ev)
	i := 0
	for {
		c := arity*i + 1
		if c >= n {
			break
		}
		m := c
		end := min(c+arity, n)
		for j := c + 1; j < end; j++ {
			if ev[j].before(&ev[m]) {
				m = j
			}
		}
		if !ev[m].before(&last) {
			break
		}
		ev[i] = ev[m]
		i = m
	}
	ev[i] = last
}

// peek returns the earliest event's time. The heap must not be empty.
func (h *eventHeap) peek() time.Duration { return h.ev[0].at }

// arity is the heap's number of children per node.
const arity = 4
