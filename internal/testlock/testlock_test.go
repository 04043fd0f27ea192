package testlock

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSharedThenExclusive(t *testing.T) {
	if !haveFlock {
		t.Skip("no flock on this system: the lock is a no-op")
	}
	// A lock of the test's own, apart from the one other packages hold.
	name := filepath.Join(t.TempDir(), "lock")
	// Two shared holders at once; an exclusive one cannot join them, and
	// gets the lock once they are gone; then no shared one can.
	a, okA := acquire(name, false, 0)
	b, okB := acquire(name, false, 0)
	if !okA || !okB {
		t.Fatal("step 0: two shared locks: not both had")
	}
	if ex, ok := acquire(name, true, 20*time.Millisecond); ok {
		ex()
		t.Fatal("step 1: exclusive lock had beside two shared ones")
	}
	a()
	b()
	ex, ok := acquire(name, true, time.Second)
	if !ok {
		t.Fatal("step 2: exclusive lock refused with no holder")
	}
	if sh, ok := acquire(name, false, 20*time.Millisecond); ok {
		sh()
		t.Error("step 3: shared lock had beside an exclusive one")
	}
	ex()
	sh, ok := acquire(name, false, 0)
	if !ok {
		t.Fatal("step 4: shared lock refused after the exclusive one was released")
	}
	sh()
}

func TestIdleShare(t *testing.T) {
	for i, tt := range []struct {
		prev, cur [2]uint64
		want      float64
	}{
		{[2]uint64{100, 200}, [2]uint64{180, 300}, 0.8},
		{[2]uint64{100, 200}, [2]uint64{100, 300}, 0},
		{[2]uint64{100, 200}, [2]uint64{100, 200}, 1}, // no time passed
	} {
		if got := idleShare(tt.prev, tt.cur); got != tt.want {
			t.Errorf("step %d: idleShare = %v, want %v", i, got, tt.want)
		}
	}
	if _, err := os.Stat("/proc/stat"); err == nil {
		if times, ok := cpuTimes(); !ok || times[0] > times[1] || times[1] == 0 {
			t.Errorf("cpuTimes = %v, %v; want idle ≤ total, total > 0", times, ok)
		}
	}
}

func TestPatienceWithinTimeout(t *testing.T) {
	got := patience()
	if got <= 0 || got > Patience {
		t.Fatalf("patience() = %v, want above 0 and at most %v", got, Patience)
	}
	if to := flag.Lookup("test.timeout").Value.(flag.Getter).Get().(time.Duration); to > 0 && got > to/4 {
		t.Errorf("patience() = %v with -test.timeout %v, want at most a quarter of it", got, to)
	}
}
