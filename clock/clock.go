// Package clock waits for a moment with sub-millisecond precision.
//
// Go's timers wake up to about a millisecond late on Linux: the runtime's
// poller sleeps in whole milliseconds. A live run at time scale 0.01 turns
// that millisecond into 100 ms of model time, on every service time and every
// scheduled send. SleepUntil waits on an ordinary timer, which watches the
// context, until the deadline is near, and sleeps the last stretch in the
// kernel's high-resolution nanosleep. It never spins.
package clock

import (
	"context"
	"time"
)

// Coarse is how near the deadline SleepUntil stops trusting the runtime's
// timer and sleeps in the kernel instead; a context cancelled during that
// last stretch is noticed when it ends.
const Coarse = 1500 * time.Microsecond

// SleepUntil waits until deadline or until ctx is done, whichever comes
// first, and reports whether it reached the deadline. It never returns true
// before the deadline. A nil ctx never ends.
func SleepUntil(ctx context.Context, deadline time.Time) bool {
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	for {
		d := time.Until(deadline)
		if d <= 0 {
			return true
		}
		if d <= Coarse {
			select {
			case <-done:
				return false
			default:
			}
			nanosleep(d)
			if d = time.Until(deadline); d > 0 {
				// The kernel slept but the clock did not move as far: a
				// fake clock (testing/synctest) only moves on timers.
				t := time.NewTimer(d)
				select {
				case <-done:
					t.Stop()
					return false
				case <-t.C:
				}
			}
			continue
		}
		t := time.NewTimer(d - Coarse)
		select {
		case <-done:
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// Sleep is SleepUntil(ctx, time.Now().Add(d)).
func Sleep(ctx context.Context, d time.Duration) bool {
	return SleepUntil(ctx, time.Now().Add(d))
}
