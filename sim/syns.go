package sim

import (
	"math"
	"time"

	"stampede/workerpool"
)

// syns holds the events of connection attempts that a full backlog
// dropped: the next SYNs their kernels send (evSYN) and, after the last,
// their giving up (evConnectFail), while no timeout of their request comes
// first. At 2,500 tenants of stock-balance nearly half the run's events
// were such SYNs, nearly all dropped again, each one a push and a pop of
// the calendar's heap. A Dropped job's SYNs keep to one schedule from its
// first (workerpool.SYNRetry), so a stage, the events after a job's n-th
// SYN, is scheduled in the order its events come in, by (at, seq), as the
// previous stage's events are handled in order: each stage is a ring, in
// order, and the earliest event is at the head of one of them. A SYN
// dropped again is then handled without the calendar and without its
// request (engine.resend): the pool tells a drop from the backlog's state
// alone (workerpool.Pool.Redrop), and the next event, into the next
// stage, needs only the request's id and its earliest timeout, which the
// entry keeps. The events and their order are those the calendar would
// give, seqs included. The zero value is empty.
type syns struct {
	// heads are the stages' earliest entries' places, side by side; an
	// empty stage's is noSYN. order holds the stages by their heads,
	// earliest first, when n > 0: a pop moves its stage down the order
	// only as far as its next head goes, where a look for the earliest
	// would read every head.
	heads  [synStages]synKey
	order  [synStages]int
	n      int // entries in all
	stages [synStages]synRing
}

// synKey is an entry's place in the order of events.
type synKey struct {
	at  time.Duration
	seq uint64
}

// noSYN is the head of an empty stage, after every entry.
var noSYN = synKey{at: never, seq: math.MaxUint64}

func (a synKey) before(b synKey) bool { return a.at < b.at || a.at == b.at && a.seq < b.seq }

// synStages is how many stages a connection attempt goes through: one
// after each of its SYNs, the first and workerpool.SYNRetries more.
const synStages = workerpool.SYNRetries + 1

// synEntry is a pending event of a dropped connection attempt: the SYN
// its kernel sends next or, in the last stage, its giving up.
type synEntry struct {
	at       time.Duration
	seq      uint64
	deadline time.Duration // the request's earliest timeout, not before at
	ref      int32         // the request
}

func (s *synEntry) key() synKey { return synKey{s.at, s.seq} }

// synRing is one stage: its entries in order, in a ring of len a power of
// two, ring[head&mask] the earliest.
type synRing struct {
	ring []synEntry
	head int
	n    int
}

// len returns the number of entries.
func (q *syns) len() int { return q.n }

// top returns the earliest entry's place. q must not be empty.
func (q *syns) top() synKey { return q.heads[q.order[0]] }

// before reports whether ev comes before every entry of q.
func (q *syns) before(ev *event) bool {
	return q.n == 0 || (synKey{ev.at, ev.seq}).before(q.top())
}

// precedes reports whether q's earliest entry comes before ev. q must not
// be empty.
func (q *syns) precedes(ev *event) bool { return q.top().before(synKey{ev.at, ev.seq}) }

// fits reports whether an event at at of seq seq may join stage i: it is
// not before the stage's latest.
func (q *syns) fits(i int, at time.Duration, seq uint64) bool {
	if i < 0 || i >= synStages {
		return false
	}
	r := &q.stages[i]
	if r.n == 0 {
		return true
	}
	return !(synKey{at, seq}).before(r.ring[(r.head+r.n-1)&(len(r.ring)-1)].key())
}

// push adds s to stage i, where it fits.
func (q *syns) push(i int, s synEntry) {
	if q.n == 0 {
		for j := range q.heads {
			q.heads[j], q.order[j] = noSYN, j
		}
	}
	r := &q.stages[i]
	if r.n == 0 { // i's head moves up the order from among the empty stages
		k := s.key()
		q.heads[i] = k
		p := 0
		for q.order[p] != i {
			p++
		}
		for ; p > 0 && k.before(q.heads[q.order[p-1]]); p-- {
			q.order[p] = q.order[p-1]
		}
		q.order[p] = i
	}
	if r.n == len(r.ring) {
		r.grow()
	}
	r.ring[(r.head+r.n)&(len(r.ring)-1)] = s
	r.n++
	q.n++
}

// pop removes and returns the earliest entry and the stage it was in. q
// must not be empty.
func (q *syns) pop() (synEntry, int) {
	i := q.order[0]
	r := &q.stages[i]
	mask := len(r.ring) - 1
	s := r.ring[r.head&mask]
	r.head++
	r.n--
	q.n--
	k := noSYN
	if r.n > 0 {
		k = r.ring[r.head&mask].key()
	}
	q.heads[i] = k
	p := 0
	for ; p+1 < len(q.order) && q.heads[q.order[p+1]].before(k); p++ {
		q.order[p] = q.order[p+1]
	}
	q.order[p] = i
	return s, i
}

// grow doubles the ring, its entries in order from 0.
func (r *synRing) grow() {
	ring := make([]synEntry, max(2*len(r.ring), 64))
	for i := range r.n {
		ring[i] = r.ring[(r.head+i)&(len(r.ring)-1)]
	}
	r.ring, r.head = ring, 0
}

// each calls f with every entry and its stage.
func (q *syns) each(f func(s *synEntry, stage int)) {
	for i := range q.stages {
		r := &q.stages[i]
		for k := range r.n {
			f(&r.ring[(r.head+k)&(len(r.ring)-1)], i)
		}
	}
}
