package sim

import (
	"math"
	"math/bits"
	"time"
)

// arrivalQueue holds the open-model tenants' next arrivals, one per tenant,
// keyed by (at, seq) like the events of eventHeap: a calendar queue. Time
// is cut into buckets of 1<<shift nanoseconds; a window of len(ring)
// buckets from base on is kept, the bucket at base as a small heap (cur)
// and each later one as an unsorted slice, and arrivals past the window
// wait in far until the window is used up. Arrivals only move forward in
// time (a tenant's next arrival is never before its last), so an arrival
// is written once into its bucket and read back with the bucket's others,
// in a few cache lines, where a tree over all tenants would read one
// scattered node per level. The bucket width is set from the arrivals the
// queue holds whenever it starts a window, so that a bucket holds about
// perBucket of them whatever the tenants' rates.
type arrivalQueue struct {
	cur    []arrival   // a min-heap of the arrivals in buckets up to base
	ring   [][]arrival // ring[b&mask] holds bucket b, for base < b < end
	far    []arrival   // arrivals in buckets from end on
	mask   int64
	shift  uint
	base   int64 // the bucket cur holds
	end    int64 // the first bucket past the window
	inRing int   // arrivals in ring
	loaded bool  // advance has moved a bucket into cur since the flag was cleared
}

// arrival is a tenant's next arrival.
type arrival struct {
	at  time.Duration
	seq uint64
	ref int32 // the tenant
}

func (a *arrival) before(b *arrival) bool {
	return a.at < b.at || a.at == b.at && a.seq < b.seq
}

// perBucket is the mean number of arrivals a bucket is sized to hold.
// Large buckets keep the writes of arrivals to few bucket tails and give
// the engine a batch of tenants to read ahead of their arrivals (see
// engine.warm); the heap of one bucket still fits the first-level cache's
// neighbour. Measured at 250,000 tenants, 512 beat 32, 128 and 2048.
const perBucket = 512

// windowGaps is the window's span in mean gaps between the arrivals of
// one tenant: a tenant's next arrival falls past the window about once
// per windowGaps of its arrivals.
const windowGaps = 4

// reset makes q hold the first arrivals evs (ref the tenant).
func (q *arrivalQueue) reset(evs []event) {
	q.cur, q.far, q.inRing = q.cur[:0], q.far[:0], 0
	for _, ev := range evs {
		q.far = append(q.far, arrival{at: ev.at, seq: ev.seq, ref: ev.ref})
	}
	q.window()
}

// len returns how many tenants have an arrival to come.
func (q *arrivalQueue) len() int { return len(q.cur) + q.inRing + len(q.far) }

// top returns the earliest arrival. The queue must not be empty.
func (q *arrivalQueue) top() *arrival { return &q.cur[0] }

// replaceTop gives the earliest arrival's tenant its next arrival, at at
// with seq seq, or, when ok is false, none.
func (q *arrivalQueue) replaceTop(at time.Duration, seq uint64, ok bool) {
	if ok && int64(at)>>q.shift <= q.base {
		q.cur[0].at, q.cur[0].seq = at, seq
		q.down(0)
		return
	}
	ref := q.cur[0].ref
	n := len(q.cur) - 1
	q.cur[0] = q.cur[n]
	q.cur = q.cur[:n]
	if n > 0 {
		q.down(0)
	}
	if ok {
		q.put(arrival{at: at, seq: seq, ref: ref})
	}
	if len(q.cur) == 0 {
		q.advance()
	}
}

// put adds a, which is not before the earliest arrival, past cur.
func (q *arrivalQueue) put(a arrival) {
	switch b := int64(a.at) >> q.shift; {
	case b <= q.base:
		q.push(a)
	case b < q.end:
		q.ring[b&q.mask] = append(q.ring[b&q.mask], a)
		q.inRing++
	default:
		q.far = append(q.far, a)
	}
}

// advance moves the next bucket with arrivals into the empty cur.
func (q *arrivalQueue) advance() {
	if q.inRing == 0 {
		q.window()
		return
	}
	for {
		q.base++
		s := &q.ring[q.base&q.mask]
		if len(*s) == 0 {
			continue
		}
		q.cur = append(q.cur, *s...)
		q.inRing -= len(*s)
		*s = (*s)[:0]
		q.heapify()
		q.loaded = true
		return
	}
}

// window starts a new window at the earliest arrival of far, when cur and
// ring are empty, sizing the buckets for the arrivals of far: all the
// queue holds.
func (q *arrivalQueue) window() {
	if len(q.far) == 0 {
		return
	}
	lo, sum := q.far[0].at, 0.0
	for i := range q.far {
		lo = min(lo, q.far[i].at)
	}
	for i := range q.far {
		sum += float64(q.far[i].at - lo)
	}
	// The arrivals pending are about one per tenant, a mean gap from now
	// on average: the mean distance from the earliest estimates the gap.
	n := len(q.far)
	gap := sum / float64(n)
	width := max(gap*perBucket/float64(n), 1)
	q.shift = uint(bits.Len64(uint64(width)) - 1)
	buckets := max(windowGaps*n/perBucket, 1)
	size := 1 << bits.Len(uint(buckets-1))
	if len(q.ring) != size {
		q.ring = make([][]arrival, size)
		q.mask = int64(size - 1)
	}
	q.base = int64(lo) >> q.shift
	q.end = q.base + int64(size)
	if q.end < q.base {
		q.end = math.MaxInt64
	}
	far := q.far
	q.far = q.far[:0] // put appends to far no faster than it reads it
	for _, a := range far {
		q.put(a)
	}
}

// push adds a to the heap cur.
func (q *arrivalQueue) push(a arrival) {
	q.cur = append(q.cur, a)
	h := q.cur
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !a.before(&h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = a
}

// down sifts cur[i] down the heap.
func (q *arrivalQueue) down(i int) {
	h := q.cur
	n := len(h)
	x := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h[c+1].before(&h[c]) {
			c++
		}
		if !h[c].before(&x) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = x
}

// heapify makes cur a heap.
func (q *arrivalQueue) heapify() {
	for i := len(q.cur)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}
