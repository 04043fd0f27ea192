package sim

import (
	"math"
	"math/bits"
	"time"
)

// calendar is a priority queue of events by (at, seq): a calendar queue.
// Time is cut into buckets of 1<<shift nanoseconds; a window of len(ring)
// buckets from base on is kept, the bucket at base as a small heap (cur)
// and each later one as an unsorted slice, and events past the window wait
// in far until the window is used up. The engine never schedules an event
// before the one it handles, so an event is written once into its bucket
// and read back with the bucket's others, in a few cache lines, where a
// heap or a tree over all of them reads one scattered node per level. The
// bucket width is set from the events the calendar holds whenever it
// starts a window, so that a bucket holds about perBucket of them whatever
// the rates; an event in the past of the window, which the engine does
// not schedule, would still come out in order. A bucket of the ring is a
// chain of blocks from one store, each block back on the free list once
// its bucket comes up: the ring holds about the events pending, where a
// slice a bucket would keep the most any bucket of its slot ever held
// (13 times the events pending, measured at 2,500 tenants). The zero
// calendar is empty; set perBucket before the first push.
type calendar struct {
	cur       []event    // a min-heap of the events in buckets up to base
	ring      []bucket   // ring[b&mask] is bucket b, for base < b < end
	blocks    []calBlock // the ring's blocks; blocks[0] is never used, so that 0 means none
	free      int32      // the first free block; 0 none
	far       []event    // events in buckets from end on
	mask      int64
	shift     uint
	base      int64 // the bucket cur holds
	end       int64 // the first bucket past the window
	inRing    int   // events in ring
	perBucket int   // the mean number of events a bucket is sized to hold
	loaded    bool  // a bucket has come into cur since the flag was cleared
}

// blockLen is how many events a block of the ring holds: a few cache
// lines to fill in order, few enough that a sparse bucket wastes little.
const blockLen = 32

// bucket is a bucket of the ring: its first block, the one put fills, and
// how many events that block holds; the blocks after it are full. The count
// is here rather than in the block so that a put reads the ring, which is
// small and dense, and one cache line of the block, the one it writes: at
// 250,000 tenants a put read the block's count from a line of its own, a
// miss per arrival (1.6 s of an 18 s run).
type bucket struct {
	first int32 // 0 none
	n     int32
}

// calBlock is a run of one bucket's events, in no order, or a free block.
type calBlock struct {
	next int32 // the bucket's next block, or the next free one; 0 none
	evs  [blockLen]event
}

// windowGaps is the window's span in mean distances from its first event
// to the others the calendar holds when it starts the window: most of them
// fall within it, and a run of them, as one tenant's arrivals, falls past
// it about once per windowGaps of its gaps.
const windowGaps = 4

// reset makes q hold evs and nothing else.
func (q *calendar) reset(evs []event) {
	q.cur, q.far, q.inRing = q.cur[:0], append(q.far[:0], evs...), 0
	clear(q.ring)
	q.blocks, q.free = q.blocks[:0], 0
	q.window()
}

// len returns the number of events.
func (q *calendar) len() int { return len(q.cur) + q.inRing + len(q.far) }

// top returns the earliest event. The calendar must not be empty.
func (q *calendar) top() *event { return &q.cur[0] }

// pop removes and returns the earliest event. The calendar must not be
// empty.
func (q *calendar) pop() event {
	ev := q.cur[0]
	q.drop()
	return ev
}

// push adds ev.
func (q *calendar) push(ev event) {
	q.put(ev)
	if len(q.cur) == 0 {
		q.advance()
	}
}

// replaceTop moves the earliest event to at with seq seq, or, when ok is
// false, removes it. at must not be before the event.
func (q *calendar) replaceTop(at time.Duration, seq uint64, ok bool) {
	if !ok {
		q.drop()
		return
	}
	ev := q.cur[0]
	ev.at, ev.seq = at, seq
	if int64(at)>>q.shift <= q.base {
		q.cur[0] = ev
		q.down(0)
		return
	}
	q.drop()
	q.push(ev)
}

// drop removes the earliest event.
func (q *calendar) drop() {
	n := len(q.cur) - 1
	q.cur[0] = q.cur[n]
	q.cur = q.cur[:n]
	if n > 0 {
		q.down(0)
		return
	}
	q.advance()
}

// put adds ev to cur, ring or far, by its bucket.
func (q *calendar) put(ev event) {
	switch b := int64(ev.at) >> q.shift; {
	case b <= q.base:
		q.up(ev)
	case b < q.end:
		s := &q.ring[b&q.mask]
		if s.first == 0 || s.n == blockLen {
			s.first, s.n = q.block(s.first), 0
		}
		q.blocks[s.first].evs[s.n] = ev
		s.n++
		q.inRing++
	default:
		q.far = append(q.far, ev)
	}
}

// advance moves the next bucket with events into the empty cur.
func (q *calendar) advance() {
	if q.inRing == 0 {
		q.window()
		return
	}
	for {
		q.base++
		s := &q.ring[q.base&q.mask]
		if s.first == 0 {
			continue
		}
		for id, n := s.first, s.n; id != 0; n = blockLen {
			blk := &q.blocks[id]
			q.cur = append(q.cur, blk.evs[:n]...)
			q.inRing -= int(n)
			next := blk.next
			blk.next, q.free = q.free, id
			id = next
		}
		*s = bucket{}
		q.heapify()
		q.loaded = true
		return
	}
}

// window starts a new window at the earliest event of far, when cur and
// ring are empty, sizing the buckets for the events of far: all the
// calendar holds.
func (q *calendar) window() {
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
	n := len(q.far)
	per := max(q.perBucket, 1)
	gap := sum / float64(n)
	width := max(gap*float64(per)/float64(n), 1)
	q.shift = uint(bits.Len64(uint64(width)) - 1)
	buckets := max(windowGaps*n/per, 1)
	size := 1 << bits.Len(uint(buckets-1))
	if len(q.ring) != size {
		q.ring = make([]bucket, size)
		q.mask = int64(size - 1)
	}
	q.base = int64(lo) >> q.shift
	q.end = q.base + int64(size)
	if q.end < q.base {
		q.end = math.MaxInt64
	}
	far := q.far
	q.far = q.far[:0] // put appends to far no faster than it reads it
	for _, ev := range far {
		q.put(ev)
	}
	q.loaded = true
}

// block returns a new empty block, from the free list when it has one,
// that chains to next.
func (q *calendar) block(next int32) int32 {
	id := q.free
	if id == 0 {
		if len(q.blocks) == 0 {
			q.blocks = append(q.blocks, calBlock{}) // 0 means none
		}
		if len(q.blocks) == math.MaxInt32 {
			panic("sim: calendar full")
		}
		id = int32(len(q.blocks))
		q.blocks = append(q.blocks, calBlock{})
	} else {
		q.free = q.blocks[id].next
	}
	q.blocks[id].next = next
	return id
}

// up adds ev to the heap cur.
func (q *calendar) up(ev event) {
	q.cur = append(q.cur, ev)
	h := q.cur
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !ev.before(&h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = ev
}

// down sifts cur[i] down the heap. The earlier child is picked without a
// branch: which one it is is a coin toss the branch predictor loses half
// the time (BenchmarkCalendarEvents 70-76 ns a pop and push, 57 without).
func (q *calendar) down(i int) {
	h := q.cur
	n := len(h)
	x := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n {
			c += earlier(&h[c+1], &h[c])
		}
		if !h[c].before(&x) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = x
}

// earlier returns 1 when a is before b, else 0, without a branch.
func earlier(a, b *event) int {
	return b2i(a.at < b.at) | b2i(a.at == b.at)&b2i(a.seq < b.seq)
}

// b2i returns 1 for true and 0 for false, which the compiler does with a
// SETcc rather than a branch.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// heapify makes cur a heap.
func (q *calendar) heapify() {
	for i := len(q.cur)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}
