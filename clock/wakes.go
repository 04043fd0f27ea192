package clock

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// Wakes counts how late precise waits (Wait with precise set, and so every
// Pacer) returned after their deadlines, process-wide, in power-of-two
// buckets of microseconds: bucket 0 holds wake-ups under 1 µs late, bucket
// k those of [2^(k-1), 2^k) µs. It is how a live run sees the CPU it was
// given: every timer of its generator, proxy and backend shares it. The
// counts only grow; take two Snapshots and Sub them for a stretch of time.
type Wakes struct {
	Buckets [wakeBuckets]uint64
}

const wakeBuckets = 40

var wakes [wakeBuckets]atomic.Uint64

// recordWake counts one precise wait that returned late by late.
func recordWake(late time.Duration) {
	us := uint64(max(late, 0) / time.Microsecond)
	wakes[min(bits.Len64(us), wakeBuckets-1)].Add(1)
}

// WakeSnapshot returns the counts so far. It is safe to call at any time.
func WakeSnapshot() Wakes {
	var w Wakes
	for i := range wakes {
		w.Buckets[i] = wakes[i].Load()
	}
	return w
}

// Sub returns the wake-ups counted in w but not in earlier.
func (w Wakes) Sub(earlier Wakes) Wakes {
	var d Wakes
	for i := range w.Buckets {
		d.Buckets[i] = w.Buckets[i] - earlier.Buckets[i]
	}
	return d
}

// Count returns the number of wake-ups counted.
func (w Wakes) Count() uint64 {
	var n uint64
	for _, c := range w.Buckets {
		n += c
	}
	return n
}

// Quantile returns the q-th quantile (0..1) of the lateness counted, as the
// middle of its bucket (within a third of the true value); zero when
// nothing was counted.
func (w Wakes) Quantile(q float64) time.Duration {
	n := w.Count()
	if n == 0 {
		return 0
	}
	rank := uint64(q * float64(n))
	var acc uint64
	for i, c := range w.Buckets {
		acc += c
		if acc > rank || acc == n {
			return bucketMiddle(i)
		}
	}
	return bucketMiddle(wakeBuckets - 1)
}

// bucketMiddle returns the middle of bucket i: 0.5 µs for bucket 0, else
// 3/4 of 2^i µs.
func bucketMiddle(i int) time.Duration {
	if i == 0 {
		return 500 * time.Nanosecond
	}
	return time.Duration(3*(uint64(1)<<i)) * time.Microsecond / 4
}

// RecordWake counts one precise wait that returned late by late (negative:
// early), for a waiter that keeps time by itself, such as an event loop
// whose wait for a moment is its poll's timeout, so that Wakes sees its
// timers as it sees Wait's.
func RecordWake(late time.Duration) { recordWake(late) }
