package testlock

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// Quiet is how idle the machine's CPUs must be, as a share of their time
// over two sampling windows in a row, before MainExclusive runs its tests:
// with the lock held no test binary starts, but the go command may still
// be linking the next ones.
const (
	quietIdle    = 0.8
	quietWindow  = 250 * time.Millisecond
	quietPatient = time.Minute
)

// waitQuiet waits until the machine is quiet, at most patience, and reports
// whether it was. Where /proc/stat cannot be read it says yes at
// once.
func waitQuiet(patience time.Duration) bool {
	start := time.Now()
	prev, ok := cpuTimes()
	if !ok {
		return true
	}
	calm := 0
	for time.Since(start) < patience {
		<-time.After(quietWindow)
		cur, ok := cpuTimes()
		if !ok {
			return true
		}
		idle := idleShare(prev, cur)
		prev = cur
		if idle < quietIdle {
			calm = 0
			continue
		}
		if calm++; calm == 2 {
			return true
		}
	}
	return false
}

// cpuTimes returns the idle and total jiffies of all CPUs from /proc/stat.
func cpuTimes() (times [2]uint64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return times, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return times, false
	}
	for i, s := range f[1:] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return times, false
		}
		times[1] += v
		if i == 3 || i == 4 { // idle and iowait
			times[0] += v
		}
	}
	return times, true
}

// idleShare is the idle share of the CPUs' time between two readings.
func idleShare(prev, cur [2]uint64) float64 {
	total := cur[1] - prev[1]
	if total == 0 {
		return 1
	}
	return float64(cur[0]-prev[0]) / float64(total)
}
