package clock

import (
	"syscall"
	"time"
)

// nanosleep blocks the calling thread for d in the kernel, whose
// high-resolution timers wake within tens of microseconds.
func nanosleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var rem syscall.Timespec
		if err := syscall.Nanosleep(&ts, &rem); err != syscall.EINTR {
			return
		}
		ts = rem
	}
}
