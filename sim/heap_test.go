package sim

import (
	"stampede/workload"
	"testing"
	"time"
)

// TestArrivalTreeOrder plays random arrivals through an arrivalTree and an
// eventHeap side by side: both must give the same events in the same
// order, ties in time included, as players run out one by one.
func TestArrivalTreeOrder(t *testing.T) {
	for _, players := range []int{1, 2, 3, 5, 8, 249} {
		rng := workload.TenantRand(uint64(players), 0)
		seq := uint64(1)
		var first []event
		var h eventHeap
		left := make([]int, players) // arrivals each player has to come
		for p := range players {
			// Coarse times make ties common.
			ev := event{at: time.Duration(rng.IntN(50)), seq: seq, ref: int32(p)}
			seq++
			first = append(first, ev)
			h.push(ev)
			left[p] = rng.IntN(40)
		}
		var tree arrivalTree
		tree.reset(first)
		for step := 0; h.len() > 0; step++ {
			if tree.len() != h.len() {
				t.Fatalf("%d players, step %d: tree holds %d, heap %d", players, step, tree.len(), h.len())
			}
			p, k := tree.top()
			want := h.ev[0]
			if got := (event{at: k.at, seq: k.seq, ref: tree.ref[p]}); got != want {
				t.Fatalf("%d players, step %d: got %+v, want %+v", players, step, got, want)
			}
			if left[want.ref] == 0 {
				h.pop()
				tree.replaceTop(0, 0, false)
				continue
			}
			left[want.ref]--
			next := event{at: want.at + time.Duration(rng.IntN(20)), seq: seq, ref: want.ref}
			seq++
			h.pop()
			h.push(next)
			tree.replaceTop(next.at, next.seq, true)
		}
		if tree.len() != 0 {
			t.Fatalf("%d players: tree holds %d after the heap ran out", players, tree.len())
		}
	}
}

// BenchmarkArrivalTree replaces the earliest of 249 arrivals, as the
// stock-balance scenario's tenants do.
func BenchmarkArrivalTree(b *testing.B) {
	b.ReportAllocs()
	rng := workload.TenantRand(1, 0)
	var first []event
	for i := range 249 {
		first = append(first, event{at: time.Duration(rng.Int64N(int64(5 * time.Second))), seq: uint64(i), ref: int32(i)})
	}
	var tree arrivalTree
	tree.reset(first)
	seq := uint64(len(first))
	for b.Loop() {
		_, k := tree.top()
		seq++
		tree.replaceTop(k.at+time.Duration(rng.Int64N(int64(10*time.Second))), seq, true)
	}
}
