// Package clock waits for a moment with sub-millisecond precision.
//
// Go's timers wake up to about a millisecond late on Linux: the runtime's
// poller sleeps in whole milliseconds. A live run at time scale 0.01 turns
// that millisecond into 100 ms of model time, on every service time and every
// scheduled send. Wait with precise set waits on an ordinary timer until the
// deadline is near, then on one shared kernel high-resolution timer (a
// timerfd read through the runtime's poller, so no thread is held asleep and
// nothing spins).
package clock

import (
	"context"
	"time"
)

// Coarse is how near the deadline a precise Wait stops trusting the
// runtime's timer.
const Coarse = 1500 * time.Microsecond

// Wait waits until deadline or until ctx is done, whichever comes first,
// and reports whether it reached the deadline; it never returns true before
// the deadline. A nil ctx never ends. Without precise it waits on the
// runtime's timer alone, which is what testing/synctest's fake clock needs.
func Wait(ctx context.Context, deadline time.Time, precise bool) bool {
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	for {
		d := time.Until(deadline)
		if d <= 0 {
			return true
		}
		if precise && d <= Coarse {
			if ch, ok := hr.at(deadline); ok {
				select {
				case <-done:
					return false
				case <-ch:
				}
				continue
			}
		}
		if precise && d > Coarse {
			d -= Coarse
		}
		t := time.NewTimer(d)
		select {
		case <-done:
			t.Stop()
			return false
		case <-t.C:
		}
	}
}
