package memnet

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// TestOverflow fills the accept queue and checks what the next dial does
// under each policy: refused at once, or retried on the schedule until the
// queue has room or the dial's context ends.
func TestOverflow(t *testing.T) {
	t.Run("refuse", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ln := fullQueue(t, Options{Backlog: 2, Overflow: Refuse})
			start := time.Now()
			_, err := ln.Dial(t.Context(), netip.Addr{})
			if !IsRefused(err) {
				t.Errorf("dial into a full queue: err %v, want refused", err)
			}
			if took := time.Since(start); took != 0 {
				t.Errorf("refused dial took %v, want 0", took)
			}
			if got := ln.Stats().Refused; got != 1 {
				t.Errorf("Stats().Refused = %d, want 1", got)
			}
		})
	})
	t.Run("retry until accepted", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ln := fullQueue(t, Options{Backlog: 1, RetryAfter: func(n int) (time.Duration, bool) { d, again := SYNSchedule(n); return 10 * d, again }})
			// Accept frees the queue at 25 s: the waiting dial gets in at its
			// third try, 10 s + 20 s after it began.
			go func() {
				time.Sleep(25 * time.Second)
				ln.Accept()
			}()
			start := time.Now()
			if _, err := ln.Dial(t.Context(), netip.Addr{}); err != nil {
				t.Fatalf("retried dial: %v", err)
			}
			if got, want := time.Since(start), 30*time.Second; got != want {
				t.Errorf("retried dial took %v, want %v", got, want)
			}
			if got := ln.Stats().Retried; got != 2 {
				t.Errorf("Stats().Retried = %d, want 2", got)
			}
		})
	})
	t.Run("retry until the deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ln := fullQueue(t, Options{Backlog: 1})
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			start := time.Now()
			_, err := ln.Dial(ctx, netip.Addr{})
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Errorf("dial past its deadline: err %v, want a timeout", err)
			}
			if got := time.Since(start); got != 60*time.Second {
				t.Errorf("dial gave up after %v, want 60s", got)
			}
			// 1, 2, 4, 8, 16 s: retries at 1, 3, 7, 15, 31 s; the next at 63 s is past it.
			if got := ln.Stats().Retried; got != 5 {
				t.Errorf("Stats().Retried = %d, want 5", got)
			}
		})
	})
	t.Run("retry until the schedule ends", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ln := fullQueue(t, Options{Backlog: 1})
			start := time.Now()
			_, err := ln.Dial(t.Context(), netip.Addr{})
			if !errors.Is(err, syscall.ETIMEDOUT) || time.Since(start) != 127*time.Second {
				t.Errorf("dial into a queue that stays full: err %v after %v, want ETIMEDOUT after 127s, as Linux's connect", err, time.Since(start))
			}
		})
	})
	t.Run("no backlog", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ln := fullQueue(t, Options{Backlog: -1, Overflow: Refuse}) // no queue: full at once
			if _, err := ln.Dial(t.Context(), netip.Addr{}); !IsRefused(err) {
				t.Errorf("dial with no Accept waiting: err %v, want refused", err)
			}
			go ln.Accept()
			synctest.Wait()
			if _, err := ln.Dial(t.Context(), netip.Addr{}); err != nil {
				t.Errorf("dial with Accept waiting: %v", err)
			}
		})
	})
}

// fullQueue returns a listener with opts whose accept queue is full: its
// Backlog dials made, none accepted. It is closed when the test ends.
func fullQueue(t *testing.T, opts Options) *Listener {
	t.Helper()
	ln := Listen(opts)
	t.Cleanup(func() { ln.Close() })
	for i := range opts.Backlog {
		if _, err := ln.Dial(t.Context(), netip.Addr{}); err != nil {
			t.Fatalf("dial %d into a queue with room: %v", i, err)
		}
	}
	return ln
}

// TestClose checks that closing the listener resets the queued connections
// and refuses new dials.
func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := Listen(Options{Backlog: 4})
		c, err := ln.Dial(t.Context(), netip.Addr{})
		if err != nil {
			t.Fatal(err)
		}
		ln.Close()
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Errorf("read from a queued connection after Close: no error, want one")
		}
		if _, err := ln.Dial(t.Context(), netip.Addr{}); !IsRefused(err) {
			t.Errorf("dial after Close: err %v, want refused", err)
		}
		if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: err %v, want net.ErrClosed", err)
		}
	})
}

// TestPipe checks the connection's byte stream, close and deadline
// semantics that net/http relies on.
func TestPipe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := newPipe()
		big := make([]byte, 3*pipeBuffer+17)
		for i := range big {
			big[i] = byte(i)
		}
		go func() {
			a.Write(big)
			a.Close()
		}()
		got, err := io.ReadAll(b)
		if err != nil || len(got) != len(big) || got[len(got)-1] != big[len(big)-1] {
			t.Errorf("step 1: read %d bytes, err %v; want %d bytes and io.EOF", len(got), err, len(big))
		}
		if _, err := b.Write([]byte("x")); err == nil {
			t.Errorf("step 2: write to an end whose peer closed: no error, want one")
		}

		c, d := newPipe()
		d.SetReadDeadline(time.Now().Add(time.Second))
		start := time.Now()
		if _, err := d.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) != time.Second {
			t.Errorf("step 3: read past its deadline: err %v after %v, want a deadline error after 1s", err, time.Since(start))
		}
		// A deadline in the past aborts a blocked read, as net/http's
		// server does to its background read.
		done := make(chan error)
		d.SetReadDeadline(time.Time{})
		go func() {
			_, err := d.Read(make([]byte, 1))
			done <- err
		}()
		synctest.Wait()
		d.SetReadDeadline(time.Unix(1, 0))
		if err := <-done; !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("step 4: blocked read after a past deadline: err %v, want a deadline error", err)
		}
		d.SetReadDeadline(time.Time{})
		c.Write([]byte("hi"))
		buf := make([]byte, 8)
		if n, err := d.Read(buf); err != nil || string(buf[:n]) != "hi" {
			t.Errorf("step 5: read after clearing the deadline: %q, %v; want \"hi\"", buf[:n], err)
		}
		// A deadline moved later before it passed holds until the later
		// one, and one cleared before it passed never comes: the timer
		// is reused, and its first firing must not end the wait.
		d.SetReadDeadline(time.Now().Add(time.Second))
		time.Sleep(500 * time.Millisecond)
		d.SetReadDeadline(time.Now().Add(2 * time.Second))
		start = time.Now()
		if _, err := d.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) != 2*time.Second {
			t.Errorf("step 5b: read past a deadline moved later: err %v after %v, want a deadline error after 2s", err, time.Since(start))
		}
		d.SetReadDeadline(time.Now().Add(time.Second))
		d.SetReadDeadline(time.Time{})
		go func() {
			time.Sleep(3 * time.Second)
			c.Write([]byte("ok"))
		}()
		if n, err := d.Read(buf); err != nil || string(buf[:n]) != "ok" {
			t.Errorf("step 5c: read after a deadline was cleared: %q, %v; want \"ok\" after 3s", buf[:n], err)
		}
		d.Close()
		if _, err := d.Read(buf); !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("step 6: read from a closed end: err %v, want io.ErrClosedPipe", err)
		}
	})
}

// IsRefused reports whether err is a dial refused by a full accept queue or
// a closed listener.
func IsRefused(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}
