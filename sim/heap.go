package sim

import "time"

// kind is what an event does when it fires.
type kind uint8

const (
	evArrival       kind = iota // an open-model tenant's next arrival; ref is the tenant
	evSend                      // a closed-model user sends; ref is the user
	evDelayEnd                  // a request's limit_req delay is over
	evEnd                       // a request's job leaves its worker
	evReadTimeout               // the proxy's read timeout of a request
	evClientTimeout             // a request's client gives up
	evSample                    // sample the backend and the busiest keys
)

// event is one thing due at a model time. Request events carry the request
// and are stale unless r.ev == seq: instead of removing an event from the
// heap when a request's plans change, the request forgets its seq.
type event struct {
	at   time.Duration
	seq  uint64 // order of scheduling: breaks ties between equal times
	r    *request
	ref  int32
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
	ev[n] = event{} // drop the request pointer
	h.ev = ev[:n]
	if n > 0 {
		h.down(last)
	}
	return top
}

// replaceTop replaces the earliest event with e: one sift instead of a pop
// and a push. The heap must not be empty.
func (h *eventHeap) replaceTop(e event) { h.down(e) }

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
