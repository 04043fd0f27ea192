package sim

import (
	"math"
	"math/bits"
	"slices"
	"time"
)

// calendar is a priority queue of events by (at, seq): a calendar queue.
// Time is cut into buckets of 1<<shift nanoseconds; a window of len(ring)
// buckets from base on is kept, the bucket at base sorted (run) and each
// later one as an unsorted slice, and events past the window wait in far
// until the window is used up. The engine never schedules an event before
// the one it handles, so an event is written once into its bucket and
// read back with the bucket's others, in a few cache lines, where a heap
// or a tree over all of them reads one scattered node per level. A bucket
// that comes up is sorted by a pass that counts its events by the high
// bits of their times and a sort of each part, a few steps an event, where
// a heap of the bucket took a sift down its depth for each (28% of the run
// at 2,500 tenants of stock-balance); an event scheduled into the bucket at
// base once it is up, as a job's end a few milliseconds on, goes to a
// small heap (cur) beside run, and the earliest event is the earlier of
// their firsts. The bucket width is set from the events the calendar holds
// whenever it starts a window, so that a bucket holds about perBucket of
// them whatever the rates; an event in the past of the window, which the
// engine does not schedule, would still come out in order. A bucket of the
// ring is a chain of blocks from one store, each block back on the free
// list once its bucket comes up: the ring holds about the events pending,
// where a slice a bucket would keep the most any bucket of its slot ever
// held (13 times the events pending, measured at 2,500 tenants). The zero
// calendar is empty; set perBucket before the first push.
type calendar struct {
	run       []event    // the events of the bucket at base, sorted, from next on
	next      int        // run[next] is run's earliest; next == len(run) when run is done
	cur       []event    // a min-heap of the events in buckets up to base that are not in run
	tmp       []event    // the bucket that comes up, for sort
	counts    []int32    // sort's counts
	ring      []bucket   // ring[b&mask] is bucket b, for base < b < end
	blocks    []calBlock // the ring's blocks; blocks[0] is never used, so that 0 means none
	free      int32      // the first free block; 0 none
	far       []event    // events in buckets from end on
	mask      int64
	shift     uint
	base      int64 // the bucket run holds
	end       int64 // the first bucket past the window
	inRing    int   // events in ring
	perBucket int   // the mean number of events a bucket is sized to hold
	loaded    bool  // a bucket has come into run since the flag was cleared
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
	q.run, q.next = q.run[:0], 0
	q.cur, q.far, q.inRing = q.cur[:0], append(q.far[:0], evs...), 0
	clear(q.ring)
	q.blocks, q.free = q.blocks[:0], 0
	q.window()
}

// len returns the number of events.
func (q *calendar) len() int { return len(q.run) - q.next + len(q.cur) + q.inRing + len(q.far) }

// inRun reports whether the earliest event is run's rather than the
// heap's. The calendar must not be empty.
func (q *calendar) inRun() bool {
	return q.next < len(q.run) && (len(q.cur) == 0 || q.run[q.next].before(&q.cur[0]))
}

// top returns the earliest event. The calendar must not be empty.
func (q *calendar) top() *event {
	if q.inRun() {
		return &q.run[q.next]
	}
	return &q.cur[0]
}

// pop removes and returns the earliest event. The calendar must not be
// empty.
func (q *calendar) pop() event {
	if q.inRun() {
		ev := q.run[q.next]
		q.next++
		q.refill()
		return ev
	}
	ev := q.cur[0]
	q.drop()
	return ev
}

// push adds ev.
func (q *calendar) push(ev event) {
	q.put(ev)
	q.refill()
}

// refill brings up the next bucket with events when the bucket at base
// has none left.
func (q *calendar) refill() {
	if q.next == len(q.run) && len(q.cur) == 0 {
		q.advance()
	}
}

// replaceTop moves the earliest event to at with seq seq, or, when ok is
// false, removes it. at must not be before the event.
func (q *calendar) replaceTop(at time.Duration, seq uint64, ok bool) {
	if q.inRun() {
		ev := q.run[q.next]
		q.next++
		if ok {
			ev.at, ev.seq = at, seq
			q.put(ev)
		}
		q.refill()
		return
	}
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

// drop removes the heap's earliest event.
func (q *calendar) drop() {
	n := len(q.cur) - 1
	q.cur[0] = q.cur[n]
	q.cur = q.cur[:n]
	if n > 0 {
		q.down(0)
		return
	}
	q.refill()
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

// advance sorts the next bucket with events into run, when run is done and
// the heap empty.
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
		q.tmp = q.tmp[:0]
		for id, n := s.first, s.n; id != 0; n = blockLen {
			blk := &q.blocks[id]
			q.tmp = append(q.tmp, blk.evs[:n]...)
			q.inRing -= int(n)
			next := blk.next
			blk.next, q.free = q.free, id
			id = next
		}
		*s = bucket{}
		q.sort()
		q.loaded = true
		return
	}
}

// window starts a new window at the earliest event of far, when run, the
// heap and ring are empty, sizing the buckets for the events of far: all
// the calendar holds. The first bucket is a bucket of the ring like the
// others, before base, which advance then sorts into run.
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
	q.base = int64(lo)>>q.shift - 1
	q.end = q.base + 1 + int64(size)
	if q.end < q.base {
		q.end = math.MaxInt64
	}
	far := q.far
	q.far = q.far[:0] // put appends to far no faster than it reads it
	for _, ev := range far {
		q.put(ev)
	}
	q.advance()
}

// sortDirect is the most events sort puts in order by insertion; more are
// first spread over parts by the high bits of their times.
const sortDirect = 16

// sort sorts tmp, the events of the bucket at base, into run. One pass
// counts the events by the high bits of their times, as many parts as
// about twice the events, and one moves them into their parts in order;
// each part, a couple of events, is then sorted by insertion, or by
// slices.SortFunc when ties in time (or a skew) crowd many into one.
func (q *calendar) sort() {
	src := q.tmp
	n := len(src)
	q.run, q.next = q.run[:0], 0
	if n <= sortDirect {
		q.run = append(q.run, src...)
		insertionSort(q.run)
		return
	}
	lo, hi := src[0].at, src[0].at
	for i := range src {
		lo, hi = min(lo, src[i].at), max(hi, src[i].at)
	}
	span := uint(bits.Len64(uint64(hi - lo)))
	digits := min(uint(bits.Len(uint(n))), 12)
	sh := uint(0)
	if span > digits {
		sh = span - digits
	}
	parts := 1 << digits
	if len(q.counts) < parts+1 {
		q.counts = make([]int32, parts+1)
	}
	counts := q.counts[:parts+1]
	clear(counts)
	for i := range src {
		counts[1+int(uint64(src[i].at-lo)>>sh)]++
	}
	for d := 1; d <= parts; d++ {
		counts[d] += counts[d-1]
	}
	if cap(q.run) < n {
		q.run = make([]event, n, 2*n)
	}
	run := q.run[:n]
	for i := range src {
		d := int(uint64(src[i].at-lo) >> sh)
		run[counts[d]] = src[i]
		counts[d]++
	}
	// counts[d] is now where part d+1 starts.
	from := 0
	for d := 0; d < parts && from < n; d++ {
		to := int(counts[d])
		switch part := run[from:to]; {
		case len(part) <= sortDirect:
			insertionSort(part)
		default:
			slices.SortFunc(part, func(a, b event) int {
				switch {
				case a.before(&b):
					return -1
				case b.before(&a):
					return 1
				}
				return 0
			})
		}
		from = to
	}
	q.run = run
}

// insertionSort sorts evs, a few events, by (at, seq).
func insertionSort(evs []event) {
	for i := 1; i < len(evs); i++ {
		x := evs[i]
		j := i
		for ; j > 0 && x.before(&evs[j-1]); j-- {
			evs[j] = evs[j-1]
		}
		evs[j] = x
	}
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
