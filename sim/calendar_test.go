package sim

import (
	"slices"
	"testing"
	"time"

	"stampede/workload"
)

// earliest is the test's model of a calendar: the events in a slice, the
// earliest found by looking at every one.
type earliest []event

func (q earliest) min() int {
	m := 0
	for i := range q {
		if q[i].before(&q[m]) {
			m = i
		}
	}
	return m
}

// TestCalendarOrder plays random events through a calendar and the model
// side by side, as the engine does: the earliest event is handled and
// replaced by its tenant's next (the arrivals), or removed and followed
// by new events no earlier than it (the others). Both must give the same
// events in the same order, ties in time included, as tenants run out
// one by one. The gaps range from ties to jumps far past the window.
func TestCalendarOrder(t *testing.T) {
	for _, tc := range []struct {
		players    int
		per        int
		first, gap int // first events in [0, first), gaps in [0, gap)
		jumpEvery  int // every so many events one is gap*1000 later; 0 never
		nextMax    int // each player has up to this many events after its first
		push       bool
	}{
		{1, 512, 50, 20, 0, 40, false},
		{2, 512, 50, 20, 0, 40, false},
		{3, 2, 50, 20, 0, 40, false},
		{5, 2, 50, 20, 0, 40, true},
		{8, 512, 50, 20, 0, 40, true},
		{249, 64, 50, 20, 0, 40, false},
		{249, 16, 1e9, 5e9, 0, 100, true},
		{1000, 8, 1e9, 5e9, 7, 100, false},
		{1000, 64, 1e9, 5e9, 7, 100, true},
		{1000, 512, 1, 3, 0, 100, false}, // all in one bucket
		{300, 4, 1e3, 1e12, 3, 50, true},
	} {
		rng := workload.TenantRand(uint64(tc.players), 0)
		seq := uint64(1)
		var model earliest
		left := make([]int, tc.players) // events each player has to come
		for p := range tc.players {
			model = append(model, event{at: time.Duration(rng.IntN(tc.first)), seq: seq, ref: int32(p)})
			seq++
			left[p] = rng.IntN(tc.nextMax)
		}
		q := calendar{perBucket: tc.per}
		q.reset(model)
		for step := 0; len(model) > 0; step++ {
			if q.len() != len(model) {
				t.Fatalf("%+v, step %d: calendar holds %d, want %d", tc, step, q.len(), len(model))
			}
			m := model.min()
			want := model[m]
			if got := *q.top(); got != want {
				t.Fatalf("%+v, step %d: got %+v, want %+v", tc, step, got, want)
			}
			model[m] = model[len(model)-1]
			model = model[:len(model)-1]
			if tc.push {
				if got := q.pop(); got != want {
					t.Fatalf("%+v, step %d: pop() = %+v, want %+v", tc, step, got, want)
				}
			}
			if left[want.ref] == 0 {
				if !tc.push {
					q.replaceTop(0, 0, false)
				}
				continue
			}
			left[want.ref]--
			gap := time.Duration(rng.IntN(tc.gap))
			if tc.jumpEvery > 0 && step%tc.jumpEvery == 0 {
				gap *= 1000
			}
			next := event{at: want.at + gap, seq: seq, ref: want.ref}
			seq++
			model = append(model, next)
			if tc.push {
				q.push(next)
			} else {
				q.replaceTop(next.at, next.seq, true)
			}
		}
		if q.len() != 0 {
			t.Fatalf("%+v: calendar holds %d after the model ran out", tc, q.len())
		}
	}
}

// BenchmarkCalendarArrivals replaces the earliest of 249 arrivals, as the
// stock-balance scenario's tenants do.
func BenchmarkCalendarArrivals(b *testing.B) {
	b.ReportAllocs()
	rng := workload.TenantRand(1, 0)
	var first []event
	for i := range 249 {
		first = append(first, event{at: time.Duration(rng.Int64N(int64(5 * time.Second))), seq: uint64(i), ref: int32(i)})
	}
	q := calendar{perBucket: arrivalsPerBucket}
	q.reset(first)
	seq := uint64(len(first))
	for b.Loop() {
		a := q.top()
		seq++
		q.replaceTop(a.at+time.Duration(rng.Int64N(int64(10*time.Second))), seq, true)
	}
}

// BenchmarkCalendarEvents pops and pushes events at random times over a
// calendar of about 1000 events.
func BenchmarkCalendarEvents(b *testing.B) {
	b.ReportAllocs()
	q := calendar{perBucket: eventsPerBucket}
	rng := workload.TenantRand(1, 0)
	for i := range 1000 {
		q.push(event{at: time.Duration(rng.Int64N(int64(time.Second))), seq: uint64(i)})
	}
	seq := uint64(1000)
	for b.Loop() {
		e := q.pop()
		seq++
		q.push(event{at: e.at + time.Duration(rng.Int64N(int64(time.Second))), seq: seq})
	}
}

// TestCalendarSort checks that a bucket comes up in order by (at, seq):
// few events and many, spread wide or narrow, with ties in time and a
// crowd of them in one part, in seq order and not.
func TestCalendarSort(t *testing.T) {
	rng := workload.TenantRand(7, 0)
	for _, tc := range []struct {
		n      int
		span   int64 // times in [0, span)
		crowd  int   // events at one time besides
		seqRev bool  // seqs run down the slice
	}{
		{1, 1, 0, false}, {5, 3, 0, true}, {16, 1e9, 0, false}, {17, 1e9, 0, true},
		{512, 1 << 30, 0, false}, {512, 1 << 30, 200, true}, {700, 4, 0, false},
		{3000, 1 << 62, 0, true}, {5000, 1 << 20, 1000, false}, {300, 1, 0, true},
	} {
		var q calendar
		for i := range tc.n + tc.crowd {
			at := time.Duration(rng.Int64N(tc.span))
			if i >= tc.n {
				at = time.Duration(tc.span / 2)
			}
			seq := uint64(i)
			if tc.seqRev {
				seq = uint64(tc.n + tc.crowd - i)
			}
			q.tmp = append(q.tmp, event{at: at, seq: seq, ref: int32(i)})
		}
		want := slices.Clone(q.tmp)
		slices.SortFunc(want, func(a, b event) int {
			if a.before(&b) {
				return -1
			}
			return 1
		})
		q.sort()
		if !slices.Equal(q.run, want) || q.next != 0 {
			t.Errorf("%+v: sort gave %d events out of order (next %d)", tc, len(q.run), q.next)
		}
	}
}
