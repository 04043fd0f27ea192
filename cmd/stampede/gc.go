package main

import (
	"os"
	"runtime/debug"
)

// liveGCPercent and liveMemoryLimit tune the collector while the live
// engine plays, and in the standalone proxy and backend. Their heap is small
// (in-flight requests are bounded) and churns thousands of requests a
// second: collecting it a quarter as often gives that CPU to the run. The
// limit bounds what the headroom may cost should a heap be large after all.
// The simulator and the reports keep Go's defaults: their heaps grow with
// the tenants, and a fixed GOGC of 400 held 441 MB where the default held
// 333–376 MB for the same CPU (stock-balance, 25,000 tenants, sim).
const (
	liveGCPercent   = 400
	liveMemoryLimit = 1 << 30
)

// tuneLiveGC applies those collector settings, unless GOGC or
// GOMEMLIMIT in the environment say otherwise, and returns what restores
// the previous ones.
func tuneLiveGC() (restore func()) {
	var undo []func()
	if os.Getenv("GOGC") == "" {
		old := debug.SetGCPercent(liveGCPercent)
		undo = append(undo, func() { debug.SetGCPercent(old) })
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		old := debug.SetMemoryLimit(liveMemoryLimit)
		undo = append(undo, func() { debug.SetMemoryLimit(old) })
	}
	return func() {
		for _, f := range undo {
			f()
		}
	}
}
