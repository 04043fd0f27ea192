package clock

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"
)

// TestClockZero: the zero Clock is real time: model instants are wall
// instants and durations are not scaled.
func TestClockZero(t *testing.T) {
	var c Clock
	now := c.Now()
	if got := c.Model.Instant(now); !got.Equal(now) {
		t.Errorf("zero Clock: Model.Instant(now) = %v, want now %v", got, now)
	}
	if got := c.Wall(3 * time.Second); got != 3*time.Second {
		t.Errorf("zero Clock: Wall(3s) = %v, want 3s", got)
	}
}

// TestClockWaitUntil plays a Clock at scale 0.01 in virtual time: a model
// second is 10 ms of wall time, and a past deadline or a done context
// ends a wait at once.
func TestClockWaitUntil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewClock(0.01, false)
		start := c.Now()
		if !c.WaitUntil(context.Background(), start.Add(c.Wall(time.Second))) {
			t.Fatal("step 1: WaitUntil(+1s model) = false, want true")
		}
		if got, want := time.Since(start), 10*time.Millisecond; got != want {
			t.Errorf("step 1: waited %v of wall time, want %v", got, want)
		}
		if got, want := c.Model.Now(), time.Second; got != want {
			t.Errorf("step 1: model time %v, want %v", got, want)
		}
		if got, want := c.Model.Instant(c.Now()), c.Model.Base.Add(time.Second); !got.Equal(want) {
			t.Errorf("step 1: model instant %v, want %v", got, want)
		}
		if !c.WaitUntil(context.Background(), start) {
			t.Error("step 2: WaitUntil(past) = false, want true")
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if c.WaitUntil(ctx, start) {
			t.Error("step 3: WaitUntil(past) with a done context = true, want false")
		}
		if c.WaitUntil(ctx, c.Now().Add(time.Hour)) {
			t.Error("step 4: WaitUntil(+1h) with a done context = true, want false")
		}
		if got := time.Since(start); got != 10*time.Millisecond {
			t.Errorf("steps 2-4 waited: %v of wall time in all, want 10ms", got)
		}
	})
}

// TestClockPastDeadlineCountsNoWake: a precise WaitUntil whose deadline has
// passed never slept, so it says nothing of the timers.
func TestClockPastDeadlineCountsNoWake(t *testing.T) {
	c := Clock{Precise: true}
	before := WakeSnapshot()
	c.WaitUntil(context.Background(), c.Now().Add(-time.Millisecond))
	if n := WakeSnapshot().Sub(before).Count(); n != 0 {
		t.Errorf("wake-ups counted for a past deadline = %d, want 0", n)
	}
}

func TestScale(t *testing.T) {
	for i, c := range []struct {
		s           Scale
		model, wall time.Duration
	}{
		{0, 3 * time.Second, 3 * time.Second},
		{1, math.MaxInt64, math.MaxInt64},
		{0.01, 120 * time.Second, 1200 * time.Millisecond},
		{0.5, -4 * time.Second, -2 * time.Second},
		{2, 5 * time.Second, 10 * time.Second},
	} {
		if got := c.s.Wall(c.model); got != c.wall {
			t.Errorf("case %d: Scale(%v).Wall(%v) = %v, want %v", i, c.s, c.model, got, c.wall)
		}
		if got := c.s.Model(c.wall); got != c.model {
			t.Errorf("case %d: Scale(%v).Model(%v) = %v, want %v", i, c.s, c.wall, got, c.model)
		}
	}
	if got := Scale(1e-9).Model(math.MaxInt64 / 2); got != math.MaxInt64 {
		t.Errorf("Model past the int64 range = %v, want it saturated at %v", got, time.Duration(math.MaxInt64))
	}
	if got := Scale(1e-9).Model(math.MinInt64 / 2); got != math.MinInt64 {
		t.Errorf("Model past the int64 range = %v, want it saturated at %v", got, time.Duration(math.MinInt64))
	}
}

func TestScaleValidate(t *testing.T) {
	for _, s := range []Scale{0, 1, 0.01, 3} {
		if err := s.Validate(); err != nil {
			t.Errorf("Scale(%v).Validate() = %v, want nil", s, err)
		}
	}
	for _, s := range []Scale{-0.5, Scale(math.NaN()), Scale(math.Inf(1))} {
		if err := s.Validate(); err == nil {
			t.Errorf("Scale(%v).Validate() = nil, want an error", s)
		}
	}
	if got := Scale(0).Factor(); got != 1 {
		t.Errorf("Scale(0).Factor() = %v, want 1", got)
	}
}

func TestModelClock(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := ModelClock{Base: base, Scale: 0.01}
	if got, want := c.WallAt(10*time.Minute), base.Add(6*time.Second); !got.Equal(want) {
		t.Errorf("WallAt(10m) = %v, want %v", got, want)
	}
	if got, want := c.Instant(base.Add(6*time.Second)), base.Add(10*time.Minute); !got.Equal(want) {
		t.Errorf("Instant(Base+6s) = %v, want Base+10m", got.Sub(base))
	}
	wall := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	for _, s := range []Scale{0, 1} {
		if got := (ModelClock{Base: base, Scale: s}).Instant(wall); !got.Equal(wall) {
			t.Errorf("scale %v: Instant(%v) = %v, want the wall instant itself", s, wall, got)
		}
	}
	n := NewModelClock(0.001)
	if got := n.Now(); got < 0 {
		t.Errorf("Now() just after NewModelClock = %v, want at least 0", got)
	}
}
