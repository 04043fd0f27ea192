//go:build !linux

package clock

import "time"

// hr has no high-resolution timer off Linux: precise waits use the
// runtime's timer.
var hr noTimer

type noTimer struct{}

func (noTimer) at(time.Time) (<-chan struct{}, bool) { return nil, false }
