package clock

import (
	"context"
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
