//go:build !linux

package clock

import "time"

// nanosleep falls back to the runtime's timer where there is no nanosleep
// wrapper; precision is the runtime's.
func nanosleep(d time.Duration) { time.Sleep(d) }
