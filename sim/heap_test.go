package sim

import (
	"stampede/workload"
	"testing"
	"time"
)

// TestArrivalQueueOrder plays random arrivals through an arrivalQueue and
// an eventHeap side by side: both must give the same events in the same
// order, ties in time included, as tenants run out one by one. The gaps
// range from ties to jumps far past the queue's window.
func TestArrivalQueueOrder(t *testing.T) {
	for _, tc := range []struct {
		players     int
		first, gap  int // first arrivals in [0, first), gaps in [0, gap)
		jumpEvery   int // every so many arrivals one is gap*1000 later; 0 never
		arrivalsMax int
	}{
		{1, 50, 20, 0, 40},
		{2, 50, 20, 0, 40},
		{3, 50, 20, 0, 40},
		{5, 50, 20, 0, 40},
		{8, 50, 20, 0, 40},
		{249, 50, 20, 0, 40},
		{249, 1e9, 5e9, 0, 100},
		{1000, 1e9, 5e9, 7, 100},
		{1000, 1, 3, 0, 100}, // all in one bucket
		{300, 1e3, 1e12, 3, 50},
	} {
		rng := workload.TenantRand(uint64(tc.players), 0)
		seq := uint64(1)
		var first []event
		var h eventHeap
		left := make([]int, tc.players) // arrivals each player has to come
		for p := range tc.players {
			ev := event{at: time.Duration(rng.IntN(tc.first)), seq: seq, ref: int32(p)}
			seq++
			first = append(first, ev)
			h.push(ev)
			left[p] = rng.IntN(tc.arrivalsMax)
		}
		var q arrivalQueue
		q.reset(first)
		for step := 0; h.len() > 0; step++ {
			if q.len() != h.len() {
				t.Fatalf("%+v, step %d: queue holds %d, heap %d", tc, step, q.len(), h.len())
			}
			a := q.top()
			want := h.ev[0]
			if got := (event{at: a.at, seq: a.seq, ref: a.ref}); got != want {
				t.Fatalf("%+v, step %d: got %+v, want %+v", tc, step, got, want)
			}
			h.pop()
			if left[want.ref] == 0 {
				q.replaceTop(0, 0, false)
				continue
			}
			left[want.ref]--
			gap := time.Duration(rng.IntN(tc.gap))
			if tc.jumpEvery > 0 && step%tc.jumpEvery == 0 {
				gap *= 1000
			}
			next := event{at: want.at + gap, seq: seq, ref: want.ref}
			seq++
			h.push(next)
			q.replaceTop(next.at, next.seq, true)
		}
		if q.len() != 0 {
			t.Fatalf("%+v: queue holds %d after the heap ran out", tc, q.len())
		}
	}
}

// BenchmarkArrivalQueue replaces the earliest of 249 arrivals, as the
// stock-balance scenario's tenants do.
func BenchmarkArrivalQueue(b *testing.B) {
	b.ReportAllocs()
	rng := workload.TenantRand(1, 0)
	var first []event
	for i := range 249 {
		first = append(first, event{at: time.Duration(rng.Int64N(int64(5 * time.Second))), seq: uint64(i), ref: int32(i)})
	}
	var q arrivalQueue
	q.reset(first)
	seq := uint64(len(first))
	for b.Loop() {
		a := q.top()
		seq++
		q.replaceTop(a.at+time.Duration(rng.Int64N(int64(10*time.Second))), seq, true)
	}
}
