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

func TestPacerLead(t *testing.T) {
	var p Pacer
	us := time.Microsecond
	steps := []struct {
		late time.Duration
		want time.Duration
	}{
		{-50 * us, 0}, // never below zero
		{80 * us, leadStride},
		{80 * us, 2 * leadStride},
		{-10 * us, leadStride},
	}
	for i, s := range steps {
		p.Observe(s.late)
		if got := time.Duration(p.lead.Load()); got != s.want {
			t.Fatalf("step %d: Observe(%v): lead %v, want %v", i, s.late, got, s.want)
		}
	}
	for range 300 {
		p.Observe(time.Millisecond)
	}
	if got := time.Duration(p.lead.Load()); got != MaxLead {
		t.Fatalf("after 300 late wake-ups: lead %v, want the bound %v", got, MaxLead)
	}
	p.Observe(-time.Microsecond)
	if got, want := time.Duration(p.lead.Load()), MaxLead-leadStep; got != want {
		t.Fatalf("after the strides: lead %v, want %v (short steps)", got, want)
	}
}

func TestPacerWait(t *testing.T) {
	var p Pacer
	for range leadStrides {
		p.Observe(time.Millisecond)
	}
	deadline := time.Now().Add(3 * time.Millisecond)
	slept, ok := p.Wait(context.Background(), deadline)
	if !slept || !ok {
		t.Fatalf("Wait(+3ms) = %v, %v; want true, true", slept, ok)
	}
	if early := time.Until(deadline); early > MaxLead {
		t.Errorf("woke %v before the deadline, want at most MaxLead %v", early, MaxLead)
	}
	slept, ok = p.Wait(context.Background(), time.Now().Add(-time.Millisecond))
	if slept || !ok {
		t.Errorf("Wait(past) = %v, %v; want false (no sleep), true", slept, ok)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := p.Wait(ctx, time.Now().Add(time.Hour)); ok {
		t.Errorf("Wait with a cancelled context: ok, want not")
	}
}

// TestWakesQuantile checks the buckets and their quantiles.
func TestWakesQuantile(t *testing.T) {
	var w Wakes
	w.Buckets[0] = 90 // under 1 µs
	w.Buckets[4] = 9  // 8..16 µs
	w.Buckets[11] = 1 // 1024..2048 µs
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Nanosecond}, {0.95, 12 * time.Microsecond}, {0.995, 1536 * time.Microsecond}} {
		if got := w.Quantile(c.q); got != c.want {
			t.Errorf("Quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := w.Sub(w).Count(); got != 0 {
		t.Errorf("w.Sub(w).Count() = %d, want 0", got)
	}
}

// TestWaitManyShort has goroutines make many waits of a few microseconds,
// shorter than arming a timer takes: an expiry the poller misses hangs the
// test.
func TestWaitManyShort(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				deadline := time.Now().Add(time.Duration((i+g)%20) * time.Microsecond)
				Wait(context.Background(), deadline, true)
				if d := time.Until(deadline); d > 0 {
					t.Errorf("a waiter woke %v early", d)
					return
				}
			}
		})
	}
	wg.Wait()
}
