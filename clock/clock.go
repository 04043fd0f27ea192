package clock

import (
	"context"
	"time"
)

// Clock is where a live component reads the time and waits: the wall
// clock, and on it the model time a time-scaled run plays. Components
// given the same Clock, rather than each calling time.Now and anchoring
// model time itself, agree on model time: they share Model's Base.
//
// The zero value is real time: model time is wall time and waits use the
// runtime's timers alone, which testing/synctest's fake clock drives. A
// Clock is a small value; it and its copies are safe for concurrent use.
type Clock struct {
	// Model reads model time off the wall clock. Its zero value is scale
	// 1, where a model instant is the wall instant (see
	// ModelClock.Instant); a Model with a Scale needs a Base, which
	// NewClock sets.
	Model ModelClock
	// Precise times waits within about 0.1 ms rather than the runtime
	// timer's millisecond (see Wait); a time-scaled run wants it. False
	// uses the runtime's timers alone.
	Precise bool
}

// NewClock returns a clock that plays model time at scale s from now, its
// model time 0, with precise waits or not.
func NewClock(s Scale, precise bool) Clock {
	return Clock{Model: NewModelClock(s), Precise: precise}
}

// Now returns the wall time now.
func (c Clock) Now() time.Time { return time.Now() }

// Wall returns the wall time the model duration d lasts.
func (c Clock) Wall(d time.Duration) time.Duration { return c.Model.Scale.Wall(d) }

// WaitUntil waits until the wall instant deadline or until ctx is done,
// whichever comes first, on the clock's timers, and reports whether it
// reached the deadline (see Wait). A deadline already past returns at
// once, true unless ctx is done, and counts no wake-up in Wakes. A nil ctx
// never ends.
func (c Clock) WaitUntil(ctx context.Context, deadline time.Time) bool {
	if !time.Now().Before(deadline) {
		return ctx == nil || ctx.Err() == nil
	}
	return Wait(ctx, deadline, c.Precise)
}
