package loadgen

import (
	"slices"
	"sync"
	"time"
)

// Stalls summarises the generator's stalls: windows of wall time in which
// at least one open-model send was due and none went out. A stall is
// measured by the scheduler at each send, from the later of the previous
// send and the intended time of this one, to this one; so it is how long
// the process (its timers, its scheduler, the CPU it got) kept the
// generator from sending, not the gaps of a quiet schedule.
type Stalls struct {
	// Count is the number of stalls of at least StallMin.
	Count uint64
	// Longest is the longest stall.
	Longest time.Duration
	// Total is the wall time of all stalls of at least StallMin.
	Total time.Duration
	// lengths holds each stall of at least StallMin, in the order they came, at
	// most maxStalls of them, for Over.
	lengths []time.Duration
	// dropped is the wall time of stalls past maxStalls, kept out of
	// lengths; Over counts it whatever its threshold.
	dropped time.Duration
}

// StallMin is the shortest window Stalls counts: shorter ones are the
// ordinary lateness of timers, which send lateness already measures.
const StallMin = 200 * time.Microsecond

// maxStalls bounds the stalls kept one by one.
const maxStalls = 1 << 14

// Over returns the wall time of the stalls longer than d, summed, and how
// many there were. Past the first maxStalls stalls it counts their time
// whatever d, which errs towards more.
func (s Stalls) Over(d time.Duration) (time.Duration, int) {
	var t time.Duration
	n := 0
	for _, l := range s.lengths {
		if l > d {
			t += l
			n++
		}
	}
	return t + s.dropped, n
}

// Add records one stall of length gap, which the caller measured to be at
// least StallMin. The zero Stalls holds none.
func (s *Stalls) Add(gap time.Duration) {
	s.Count++
	s.Total += gap
	s.Longest = max(s.Longest, gap)
	if len(s.lengths) < maxStalls {
		s.lengths = append(s.lengths, gap)
	} else {
		s.dropped += gap
	}
}

// stallRecorder records stalls from the scheduler goroutine; summary may be
// called from any goroutine. The zero value is ready to use.
type stallRecorder struct {
	mu     sync.Mutex
	stalls Stalls
	last   time.Time // the scheduler's previous send; scheduler only
}

// sent records a send made at now that was intended at due.
func (r *stallRecorder) sent(due, now time.Time) {
	from := r.last
	if due.After(from) {
		from = due
	}
	r.last = now
	gap := now.Sub(from)
	if gap < StallMin {
		return
	}
	r.mu.Lock()
	r.stalls.Add(gap)
	r.mu.Unlock()
}

func (r *stallRecorder) summary() Stalls {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stalls
	s.lengths = slices.Clone(s.lengths)
	return s
}
