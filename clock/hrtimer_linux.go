package clock

import (
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"stampede/internal/timeheap"
)

// hr is the process's one high-resolution waker.
var hr = hrTimer{waiters: timeheap.Heap[*waiter]{At: func(w *waiter) time.Time { return w.at }}}

// hrTimer wakes waiters at their deadlines from one timerfd, armed for the
// earliest. A goroutine reads the timerfd through the runtime's poller,
// which returns as soon as the kernel's timer fires.
type hrTimer struct {
	once    sync.Once
	f       *os.File // nil when the timerfd could not be made
	mu      sync.Mutex
	waiters timeheap.Heap[*waiter]
	armed   time.Time // the deadline the timerfd is set for; zero when unarmed
}

// at returns a channel closed at deadline, or false when there is no
// timerfd (the caller then falls back to the runtime's timer).
func (h *hrTimer) at(deadline time.Time) (<-chan struct{}, bool) {
	h.once.Do(h.start)
	if h.f == nil {
		return nil, false
	}
	w := &waiter{at: deadline, ch: make(chan struct{})}
	h.mu.Lock()
	h.waiters.Push(w)
	if h.armed.IsZero() || deadline.Before(h.armed) {
		h.arm(deadline)
	}
	h.mu.Unlock()
	return w.ch, true
}

func (h *hrTimer) start() {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return
	}
	h.f = os.NewFile(uintptr(fd), "timerfd")
	go h.run() // lives as long as the process, like the runtime's own timers
}

// arm sets the timerfd for deadline. h.mu is held.
func (h *hrTimer) arm(deadline time.Time) {
	d := time.Until(deadline)
	if d < time.Microsecond {
		d = time.Microsecond // zero would disarm it
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(int(h.f.Fd()), 0, &spec, nil); err != nil {
		// Wake everyone now rather than never; they fall back on timers.
		for h.waiters.Len() > 0 {
			close(h.waiters.Pop().ch)
		}
		h.armed = time.Time{}
		return
	}
	h.armed = deadline
}

func (h *hrTimer) run() {
	var buf [8]byte
	for {
		if _, err := h.f.Read(buf[:]); err != nil {
			return
		}
		now := time.Now()
		h.mu.Lock()
		h.armed = time.Time{}
		for h.waiters.Len() > 0 && !h.waiters.Min().at.After(now) {
			close(h.waiters.Pop().ch)
		}
		if h.waiters.Len() > 0 {
			h.arm(h.waiters.Min().at)
		}
		h.mu.Unlock()
	}
}

type waiter struct {
	at time.Time
	ch chan struct{}
}
