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

// arrivalTree holds the open-model tenants' next arrivals: a tournament
// tree of losers over one player per tenant, keyed by (at, seq) like the
// events of eventHeap. Replacing the earliest arrival by the same tenant's
// next costs one comparison per level of the tree, against a heap's
// several per level; each match's loser is kept with its key, so a replay
// reads the nodes on one path and nothing else. A tenant with no more
// arrivals plays on at never.
type arrivalTree struct {
	node []arrivalNode // node[0] is the winner, node[1:] the losers of the matches
	ref  []int32       // per player: the tenant
	live int           // players not at never
}

// arrivalNode is a player and its next arrival.
type arrivalNode struct {
	arrivalKey
	p int32
}

type arrivalKey struct {
	at  time.Duration
	seq uint64
}

func (a *arrivalKey) before(b *arrivalKey) bool {
	return a.at < b.at || a.at == b.at && a.seq < b.seq
}

var neverKey = arrivalKey{at: never, seq: ^uint64(0)}

// reset makes the tree hold one first arrival per entry of evs (ref the
// tenant, at and seq the arrival's).
func (t *arrivalTree) reset(evs []event) {
	k := 1
	for k < len(evs) {
		k *= 2
	}
	t.node = make([]arrivalNode, k)
	t.ref = make([]int32, k)
	t.live = len(evs)
	// Play every match bottom up: win[n] is the winner below node n.
	win := make([]arrivalNode, 2*k)
	for p := range k {
		win[k+p] = arrivalNode{neverKey, int32(p)}
		if p < len(evs) {
			win[k+p].arrivalKey = arrivalKey{evs[p].at, evs[p].seq}
			t.ref[p] = evs[p].ref
		}
	}
	for n := k - 1; n >= 1; n-- {
		a, b := win[2*n], win[2*n+1]
		if b.before(&a.arrivalKey) {
			a, b = b, a
		}
		win[n], t.node[n] = a, b
	}
	t.node[0] = win[1]
	if k == 1 {
		t.node[0] = win[k]
	}
}

// len returns how many tenants have an arrival to come.
func (t *arrivalTree) len() int { return t.live }

// top returns the earliest arrival's player, time and seq. The tree must
// not be empty.
func (t *arrivalTree) top() (player int32, key *arrivalKey) {
	return t.node[0].p, &t.node[0].arrivalKey
}

// replaceTop gives the earliest arrival's player its next arrival, at at
// with seq seq, or, when ok is false, none.
func (t *arrivalTree) replaceTop(at time.Duration, seq uint64, ok bool) {
	w := arrivalNode{arrivalKey{at, seq}, t.node[0].p}
	if !ok {
		w.arrivalKey = neverKey
		t.live--
	}
	node := t.node
	for n := (len(node) + int(w.p)) >> 1; n > 0; n >>= 1 {
		if l := &node[n]; l.before(&w.arrivalKey) {
			w, *l = *l, w
		}
	}
	node[0] = w
}
