package clock

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestSleepUntilNeverEarly(t *testing.T) {
	for i, d := range []time.Duration{-time.Millisecond, 0, 10 * time.Microsecond, 300 * time.Microsecond, Coarse, 3 * time.Millisecond} {
		deadline := time.Now().Add(d)
		if !SleepUntil(context.Background(), deadline) {
			t.Fatalf("step %d: SleepUntil(+%v) = false, want true", i, d)
		}
		if now := time.Now(); now.Before(deadline) {
			t.Errorf("step %d: returned %v before the deadline", i, deadline.Sub(now))
		}
	}
}

func TestSleepUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if SleepUntil(ctx, time.Now().Add(time.Hour)) {
		t.Fatal("SleepUntil with a cancelled context = true, want false")
	}
	if SleepUntil(ctx, time.Now().Add(time.Millisecond)) {
		t.Fatal("SleepUntil with a cancelled context inside Coarse = true, want false")
	}
	ctx, cancel = context.WithCancel(context.Background())
	go cancel()
	if SleepUntil(ctx, time.Now().Add(time.Hour)) {
		t.Fatal("SleepUntil cancelled while waiting = true, want false")
	}
}

func TestSleepNilContext(t *testing.T) {
	//lint:ignore SA1012 a nil context is documented as never ending
	if !Sleep(nil, 100*time.Microsecond) { //nolint:staticcheck
		t.Fatal("Sleep(nil, 100µs) = false, want true")
	}
}

// BenchmarkOvershoot reports how late SleepUntil and a plain timer wake for
// a 300µs wait, the page time of the stock-balance scenario at time scale 0.01.
func BenchmarkOvershoot(b *testing.B) {
	const d = 300 * time.Microsecond
	b.Run("SleepUntil", func(b *testing.B) {
		var late time.Duration
		for b.Loop() {
			deadline := time.Now().Add(d)
			SleepUntil(context.Background(), deadline)
			late += time.Since(deadline)
		}
		b.ReportMetric(float64(late.Microseconds())/float64(b.N), "µs-late/op")
	})
	b.Run("Timer", func(b *testing.B) {
		var late time.Duration
		for b.Loop() {
			deadline := time.Now().Add(d)
			t := time.NewTimer(d)
			<-t.C
			late += time.Since(deadline)
		}
		b.ReportMetric(float64(late.Microseconds())/float64(b.N), "µs-late/op")
	})
}

func TestSleepUntilFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		for i, d := range []time.Duration{300 * time.Microsecond, Coarse, time.Second} {
			deadline := time.Now().Add(d)
			if !SleepUntil(context.Background(), deadline) {
				t.Fatalf("step %d: SleepUntil = false, want true", i)
			}
			if got := time.Now(); got.Before(deadline) {
				t.Errorf("step %d: woke %v early in virtual time", i, deadline.Sub(got))
			}
		}
		if got, want := time.Since(start), 300*time.Microsecond+Coarse+time.Second; got != want {
			t.Errorf("virtual time passed = %v, want %v", got, want)
		}
	})
}
