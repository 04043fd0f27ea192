package clock

import (
	"fmt"
	"math"
	"time"
)

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
// Base. Its zero value counts from the zero time.Time at scale 1; use
// NewModelClock. A ModelClock is a value and safe for concurrent use.
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
