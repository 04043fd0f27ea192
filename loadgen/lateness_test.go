package loadgen

import (
	"testing"
	"time"

	"stampede/workload"
)

func TestLatenessSummary(t *testing.T) {
	l := newLatenessRecorder()
	if got := l.summary(); got != (workload.Lateness{}) {
		t.Fatalf("empty: got %+v, want zero", got)
	}
	us := time.Microsecond
	// 100 sends: 10 early by 20 µs, 80 late by 50 µs, 9 by 400 µs, one an
	// hour and more behind (clamped, not lost).
	for range 10 {
		l.record(-20 * us)
	}
	for range 80 {
		l.record(50 * us)
	}
	for range 9 {
		l.record(400 * us)
	}
	l.record(2 * time.Hour)
	got := l.summary()
	if got.Sends != 100 || got.Early != 10 {
		t.Errorf("sends %d early %d, want 100 and 10", got.Sends, got.Early)
	}
	near := func(name string, got, want time.Duration) {
		t.Helper()
		if d := got - want; d < -us || d > us {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	near("p50", got.P50, 50*us)
	near("p90", got.P90, 50*us)
	near("p99", got.P99, 400*us)
	if got.Max < 59*time.Minute {
		t.Errorf("max: got %v, want the histogram's top (about an hour)", got.Max)
	}
}
