package timeheap

import "time"

// Heap is a binary min-heap of items by At(item). At must be set before
// the first Push; the zero Heap is otherwise empty and ready. Items with
// equal times come out in no particular order. A Heap is not safe for
// concurrent use.
type Heap[T any] struct {
	At    func(T) time.Time
	items []T
}

// Len returns the number of items.
func (h *Heap[T]) Len() int { return len(h.items) }

// Min returns the item with the earliest time without removing it. It
// panics on an empty heap.
func (h *Heap[T]) Min() T { return h.items[0] }

// Items returns the items in heap order (not sorted), for inspection; the
// slice is the heap's own and must not be changed.
func (h *Heap[T]) Items() []T { return h.items }

// Push adds x.
func (h *Heap[T]) Push(x T) {
	h.items = append(h.items, x)
	s := h.items
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(s[i], s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

// Pop removes and returns the item with the earliest time. It panics on an
// empty heap.
func (h *Heap[T]) Pop() T {
	s := h.items
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	var zero T
	s[n] = zero // let the popped item go
	s = s[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && h.less(s[l], s[m]) {
			m = l
		}
		if r := l + 1; r < n && h.less(s[r], s[m]) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	h.items = s
	return top
}

func (h *Heap[T]) less(a, b T) bool { return h.At(a).Before(h.At(b)) }
