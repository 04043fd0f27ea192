package timeheap

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

type item struct {
	at time.Time
	id int
}

func newHeap() *Heap[*item] {
	return &Heap[*item]{At: func(x *item) time.Time { return x.at }}
}

// TestHeapOrder pushes and pops at random, with many equal times, and
// checks every Pop against the earliest time still held.
func TestHeapOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Unix(1000, 0)
	h := newHeap()
	var held []time.Time // what the heap should hold, unordered
	for step := range 5000 {
		if h.Len() != len(held) {
			t.Fatalf("step %d: Len = %d, want %d", step, h.Len(), len(held))
		}
		if len(held) == 0 || rng.IntN(3) > 0 {
			at := t0.Add(time.Duration(rng.IntN(50)) * time.Millisecond)
			h.Push(&item{at: at, id: step})
			held = append(held, at)
			continue
		}
		want := slices.MinFunc(held, time.Time.Compare)
		if got := h.Min().at; !got.Equal(want) {
			t.Fatalf("step %d: Min at %v, want %v", step, got.Sub(t0), want.Sub(t0))
		}
		if got := h.Pop().at; !got.Equal(want) {
			t.Fatalf("step %d: Pop at %v, want %v", step, got.Sub(t0), want.Sub(t0))
		}
		i := slices.IndexFunc(held, want.Equal)
		held = slices.Delete(held, i, i+1)
	}
	var drained []time.Time
	for h.Len() > 0 {
		drained = append(drained, h.Pop().at)
	}
	if !slices.IsSortedFunc(drained, time.Time.Compare) || len(drained) != len(held) {
		t.Errorf("draining gave %d items, sorted %v; want %d sorted", len(drained), slices.IsSortedFunc(drained, time.Time.Compare), len(held))
	}
}

// TestHeapPopReleases checks that a popped item is not kept alive by the
// heap's backing array.
func TestHeapPopReleases(t *testing.T) {
	h := newHeap()
	t0 := time.Unix(0, 0)
	for i := range 3 {
		h.Push(&item{at: t0.Add(time.Duration(i)), id: i})
	}
	h.Pop()
	if back := h.items[:3][2]; back != nil {
		t.Errorf("the slot a Pop emptied still holds item %d", back.id)
	}
	if got := len(h.Items()); got != 2 {
		t.Errorf("Items has %d entries, want 2", got)
	}
}
