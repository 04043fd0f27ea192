package loadgen

import (
	"math"
	"sync/atomic"
	"time"

	"stampede/clock"
	"stampede/workload"
)

// Counters are a driver's live counts, for progress displays. The zero value
// is ready to use; it is safe for concurrent use, every field updated
// atomically.
type Counters struct {
	start     atomic.Int64  // wall start of the run, Unix nanoseconds; 0 before
	scale     atomic.Uint64 // float64 bits of the clock.Scale
	sent      atomic.Uint64
	inFlight  atomic.Int64
	abandoned atomic.Uint64
	outcomes  [workload.NumOutcomes]atomic.Uint64
}

// Progress is a snapshot of Counters.
type Progress struct {
	Elapsed   time.Duration                // model time since the start of the run; 0 before it
	Sent      uint64                       // requests sent
	InFlight  int64                        // requests sent whose end is not yet known
	Outcomes  [workload.NumOutcomes]uint64 // results handed to the sink, by outcome (Dropped included)
	Abandoned uint64                       // requests cut off by cancellation of Run's context; never recorded
}

// Snapshot returns the counts now. The fields are read one by one, so a
// request that ends during the call may be seen both in flight and done.
func (c *Counters) Snapshot() Progress {
	var p Progress
	if s := c.start.Load(); s != 0 {
		scale := clock.Scale(math.Float64frombits(c.scale.Load()))
		p.Elapsed = scale.Model(time.Since(time.Unix(0, s)))
	}
	p.Sent = c.sent.Load()
	p.InFlight = c.inFlight.Load()
	p.Abandoned = c.abandoned.Load()
	for i := range c.outcomes {
		p.Outcomes[i] = c.outcomes[i].Load()
	}
	return p
}
