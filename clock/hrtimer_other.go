//go:build !linux

package clock

import (
	"context"
	"time"
)

// hr has no high-resolution timer off Linux: precise waits use the
// runtime's timer.
var hr noTimer

type noTimer struct{}

func (noTimer) sleep(context.Context, time.Duration) bool { return false }
