package clock

import (
	"context"
	"fmt"
	"math"
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

// Scale is a live run's time scale: a model duration d lasts d × Scale of
// wall time, so 0.01 plays the model 100 times faster. The zero value means
// 1, real time. It is the one place where model and wall durations are
// converted.
type Scale float64

// Validate reports a scale that is not a finite number of at least 0.
func (s Scale) Validate() error {
	if f := float64(s); math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return fmt.Errorf("time scale %v: want a number above 0 (0.01 plays 100× faster; 0 means 1)", f)
	}
	return nil
}

// Factor returns the scale as a number, 1 for the zero value.
func (s Scale) Factor() float64 {
	if s == 0 {
		return 1
	}
	return float64(s)
}

// Wall returns the wall time the model duration d lasts.
func (s Scale) Wall(d time.Duration) time.Duration {
	if s == 0 || s == 1 {
		return d
	}
	return saturate(float64(d) * float64(s))
}

// Model returns the model duration the wall duration w plays.
func (s Scale) Model(w time.Duration) time.Duration {
	if s == 0 || s == 1 {
		return w
	}
	return saturate(float64(w) / float64(s))
}

// saturate converts nanoseconds to a Duration, saturating at the int64
// range, since a float conversion out of range is undefined; NaN is 0.
func saturate(v float64) time.Duration {
	switch {
	case v != v:
		return 0
	case v >= math.MaxInt64:
		return math.MaxInt64
	case v <= math.MinInt64:
		return math.MinInt64
	}
	return time.Duration(v)
}

// ModelClock reads model time off the wall clock: the model time at a wall
// instant is the wall time since Base, played at Scale, so model time 0 is
// Base. Its zero value is scale 1, where Instant is the wall instant
// itself; but its Now counts from the zero time.Time, so a clock whose
// model durations are read wants NewModelClock. A ModelClock is a value and
// safe for concurrent use; copies agree on model time.
type ModelClock struct {
	Base  time.Time
	Scale Scale
}

// NewModelClock returns a clock whose model time 0 is now.
func NewModelClock(s Scale) ModelClock { return ModelClock{Base: time.Now(), Scale: s} }

// Now returns the model time now.
func (c ModelClock) Now() time.Duration { return c.Scale.Model(time.Since(c.Base)) }

// WallAt returns the wall instant at which model time t falls.
func (c ModelClock) WallAt(t time.Duration) time.Time { return c.Base.Add(c.Scale.Wall(t)) }

// Instant returns the model time at the wall instant wall as an instant
// on the wall clock's axis, Base plus the model time since Base, for code
// that keeps time in time.Time (the limiters). At scale 1 it is wall
// itself, whatever Base.
func (c ModelClock) Instant(wall time.Time) time.Time {
	if c.Scale == 0 || c.Scale == 1 {
		return wall
	}
	return c.Base.Add(c.Scale.Model(wall.Sub(c.Base)))
}
