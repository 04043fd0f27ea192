package loadgen

import (
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"stampede/workload"
)

// latenessOffset shifts lateness into the histogram's non-negative range:
// a send can be early by at most clock.MaxLead.
const latenessOffset = time.Millisecond

// latenessRecorder records send lateness from the driver's sink goroutine,
// which reads it from each Result, so that no lock is taken on the way a
// request is sent; summary may be called from any goroutine. The zero
// value is not ready; use newLatenessRecorder.
type latenessRecorder struct {
	mu    sync.Mutex     // guards h and early against summary
	h     *hdr.Histogram // microseconds + latenessOffset
	early uint64
}

func newLatenessRecorder() *latenessRecorder {
	// 1 µs to an hour at three significant digits.
	return &latenessRecorder{h: hdr.New(1, int64(time.Hour/time.Microsecond), 3)}
}

// record records one send late by late, from the sink goroutine only. The
// lock it takes is never contended but by summary.
func (l *latenessRecorder) record(late time.Duration) {
	v := max((late+latenessOffset)/time.Microsecond, 0)
	l.mu.Lock()
	if late < 0 {
		l.early++
	}
	// Values past the histogram's top are clamped rather than lost.
	if l.h.RecordValue(int64(v)) != nil {
		l.h.RecordValue(l.h.HighestTrackableValue())
	}
	l.mu.Unlock()
}

func (l *latenessRecorder) summary() workload.Lateness {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.h.TotalCount()
	if n == 0 {
		return workload.Lateness{}
	}
	at := func(v int64) time.Duration { return time.Duration(v)*time.Microsecond - latenessOffset }
	return workload.Lateness{
		Sends: uint64(n),
		Early: l.early,
		P50:   at(l.h.ValueAtQuantile(50)),
		P90:   at(l.h.ValueAtQuantile(90)),
		P99:   at(l.h.ValueAtQuantile(99)),
		Max:   at(l.h.Max()),
	}
}
