package clock

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestWaitNeverEarly(t *testing.T) {
	for _, precise := range []bool{false, true} {
		for i, d := range []time.Duration{-time.Millisecond, 0, 10 * time.Microsecond, 300 * time.Microsecond, Coarse, 3 * time.Millisecond} {
			deadline := time.Now().Add(d)
			if !Wait(context.Background(), deadline, precise) {
				t.Fatalf("precise=%v step %d: Wait(+%v) = false, want true", precise, i, d)
			}
			if now := time.Now(); now.Before(deadline) {
				t.Errorf("precise=%v step %d: returned %v before the deadline", precise, i, deadline.Sub(now))
			}
		}
	}
}

// TestWaitConcurrent has many goroutines wait for deadlines in and out of
// order on the shared timer; each must wake, and none early.
func TestWaitConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	early := make(chan time.Duration, 200)
	for i := range 200 {
		wg.Go(func() {
			deadline := time.Now().Add(time.Duration(200-i) * 10 * time.Microsecond)
			Wait(context.Background(), deadline, true)
			if d := time.Until(deadline); d > 0 {
				early <- d
			}
		})
	}
	wg.Wait()
	close(early)
	for d := range early {
		t.Errorf("a waiter woke %v early", d)
	}
}

func TestWaitCancelled(t *testing.T) {
	for _, precise := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if Wait(ctx, time.Now().Add(time.Hour), precise) {
			t.Fatalf("precise=%v: Wait with a cancelled context = true, want false", precise)
		}
		if Wait(ctx, time.Now().Add(time.Millisecond), precise) {
			t.Fatalf("precise=%v: Wait with a cancelled context inside Coarse = true, want false", precise)
		}
		ctx, cancel = context.WithCancel(context.Background())
		go cancel()
		if Wait(ctx, time.Now().Add(time.Hour), precise) {
			t.Fatalf("precise=%v: Wait cancelled while waiting = true, want false", precise)
		}
	}
}

func TestWaitNilContext(t *testing.T) {
	//lint:ignore SA1012 a nil context is documented as never ending
	if !Wait(nil, time.Now().Add(100*time.Microsecond), true) { //nolint:staticcheck
		t.Fatal("Wait(nil, +100µs) = false, want true")
	}
}

func TestWaitFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		for i, d := range []time.Duration{300 * time.Microsecond, Coarse, time.Second} {
			deadline := time.Now().Add(d)
			if !Wait(context.Background(), deadline, false) {
				t.Fatalf("step %d: Wait = false, want true", i)
			}
			if got := time.Now(); !got.Equal(deadline) {
				t.Errorf("step %d: woke at %v, want exactly the deadline in virtual time", i, got.Sub(deadline))
			}
		}
		if got, want := time.Since(start), 300*time.Microsecond+Coarse+time.Second; got != want {
			t.Errorf("virtual time passed = %v, want %v", got, want)
		}
	})
}

// BenchmarkOvershoot reports how late a wait of 300µs (the page time of
// the stock-balance scenario at time scale 0.01) wakes, precise and not.
func BenchmarkOvershoot(b *testing.B) {
	const d = 300 * time.Microsecond
	for _, precise := range []bool{true, false} {
		name := "runtime-timer"
		if precise {
			name = "precise"
		}
		b.Run(name, func(b *testing.B) {
			var late time.Duration
			for b.Loop() {
				deadline := time.Now().Add(d)
				Wait(context.Background(), deadline, precise)
				late += time.Since(deadline)
			}
			b.ReportMetric(float64(late.Microseconds())/float64(b.N), "µs-late/op")
		})
	}
}
