package clock

import (
	"context"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// hr is the process's pool of high-resolution timers.
var hr timerPool

// maxTimers bounds the timerfds in use at once; a wait beyond it falls
// back on the runtime's timer.
const maxTimers = 1024

// timerPool lends each precise wait a timerfd of its own, read through the
// runtime's poller: the waiting goroutine is the one the poller wakes when
// the kernel's timer fires. (One shared timerfd read by a goroutine of its
// own, which then woke the waiter, woke two goroutines a wait, and so on a
// machine of few cores often a second thread as well.) Timerfds are kept
// for reuse, as many as were ever in use at once.
type timerPool struct {
	mu    sync.Mutex
	free  []*timer
	inUse int
}

// timer is one timerfd and what a wait on it needs, allocated once.
type timer struct {
	f     *os.File
	rc    syscall.RawConn
	read  func(uintptr) bool // t.readOnce, bound once
	fired sync.WaitGroup     // the cancelling AfterFunc, while it runs

	// The wait under way: how long, its context's Done, whether the
	// callback armed the timer, and its error.
	d     time.Duration
	done  <-chan struct{}
	armed bool
	err   error
	spec  unix.ItimerSpec
	buf   [8]byte
}

// sleep waits about d on a timerfd, or until ctx (which may be nil) is
// done, and reports whether it could: false means no timerfd was to be
// had, and the caller should use the runtime's timer. The kernel's timer
// never fires early, but the caller checks the time anyway.
func (p *timerPool) sleep(ctx context.Context, d time.Duration) bool {
	t := p.get()
	if t == nil {
		return false
	}
	var stop func() bool
	t.d, t.done, t.armed, t.err = d, nil, false, nil
	if ctx != nil {
		if t.done = ctx.Done(); t.done != nil {
			t.fired.Add(1)
			stop = context.AfterFunc(ctx, t.fire)
		}
	}
	err := t.rc.Read(t.read)
	if err == nil {
		err = t.err
	}
	clean := err == nil
	if stop != nil {
		if stop() {
			t.fired.Done()
		} else {
			// The cancel re-armed the timer; its expiry may still be
			// pending, which would wake the next user early.
			t.fired.Wait()
			clean = false
		}
	}
	t.done = nil
	if clean {
		p.put(t)
	} else {
		p.drop(t)
	}
	// A wait that failed (a timerfd the poller does not take, or that
	// could not be armed) did not wait: the runtime's timer must.
	return err == nil
}

// readOnce is the raw read's callback. The first call arms the timer and
// returns to wait for the poller: armed only now, after the read reset
// the poller's readiness, so that an expiry cannot come before the reset
// and be forgotten. Later calls read the expiry count, and wait again on
// EAGAIN (a readiness left from an earlier wait on the same timerfd).
func (t *timer) readOnce(fd uintptr) bool {
	if !t.armed {
		t.armed = true
		if t.err = t.arm(int(fd), t.d); t.err != nil {
			return true
		}
		select {
		case <-t.done: // cancelled before the AfterFunc could re-arm it
			return true
		default:
			return false
		}
	}
	_, err := unix.Read(int(fd), t.buf[:])
	return err != unix.EAGAIN
}

// arm sets the timer to fire once after d.
func (t *timer) arm(fd int, d time.Duration) error {
	t.spec = unix.ItimerSpec{Value: unix.NsecToTimespec(int64(max(d, time.Nanosecond)))} // zero would disarm it
	return unix.TimerfdSettime(fd, 0, &t.spec, nil)
}

// fire makes the timer fire now: a cancelled context's AfterFunc.
func (t *timer) fire() {
	defer t.fired.Done()
	var spec unix.ItimerSpec
	spec.Value.Nsec = 1
	_ = t.rc.Control(func(fd uintptr) { _ = unix.TimerfdSettime(int(fd), 0, &spec, nil) })
}

func (p *timerPool) get() *timer {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		t := p.free[n-1]
		p.free = p.free[:n-1]
		p.inUse++
		p.mu.Unlock()
		return t
	}
	if p.inUse >= maxTimers {
		p.mu.Unlock()
		return nil
	}
	p.inUse++
	p.mu.Unlock()
	t := newTimer()
	if t == nil {
		p.mu.Lock()
		p.inUse--
		p.mu.Unlock()
	}
	return t
}

func newTimer() *timer {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), "timerfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil
	}
	t := &timer{f: f, rc: rc}
	t.read = t.readOnce
	return t
}

func (p *timerPool) put(t *timer) {
	p.mu.Lock()
	p.free = append(p.free, t)
	p.inUse--
	p.mu.Unlock()
}

// drop closes a timer that cannot be reused.
func (p *timerPool) drop(t *timer) {
	t.f.Close()
	p.mu.Lock()
	p.inUse--
	p.mu.Unlock()
}
