package workerpool

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestEmpirical(t *testing.T) {
	d, err := ParseDist("empirical:p0=1ms,p50=30ms,p90=200ms,p100=4m")
	if err != nil {
		t.Fatal(err)
	}
	e := d.(Empirical)
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0, time.Millisecond}, {25, 15500 * time.Microsecond}, {50, 30 * time.Millisecond}, {70, 115 * time.Millisecond}, {90, 200 * time.Millisecond}, {100, 4 * time.Minute}} {
		if got := e.Quantile(tc.q); got != tc.want {
			t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	// Mean: the trapezoids' areas.
	want := time.Duration(0.5*float64(31*time.Millisecond)/2 + 0.4*float64(230*time.Millisecond)/2 + 0.1*float64(4*time.Minute+200*time.Millisecond)/2)
	if got := e.Mean(); got-want > time.Microsecond || want-got > time.Microsecond {
		t.Errorf("Mean() = %v, want %v", got, want)
	}
	if got, want := e.String(), "empirical:p0=1ms,p50=30ms,p90=200ms,p100=4m"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	// Draws fall in the table's bounds, and their share below p50 is a half.
	r := rand.New(rand.NewPCG(1, 2))
	below := 0
	const n = 20000
	for i := range n {
		v := e.Sample(r)
		if v < time.Millisecond || v > 4*time.Minute {
			t.Fatalf("draw %d: %v outside 1ms..4m", i, v)
		}
		if v < 30*time.Millisecond {
			below++
		}
	}
	if share := float64(below) / n; share < 0.48 || share > 0.52 {
		t.Errorf("share of draws below p50 = %.3f, want 0.5 ± 0.02", share)
	}
}
