package memnet

import (
	"errors"
	"io"
	"os"
	"testing"
	"testing/synctest"
	"time"
)

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
		d.Close()
		if _, err := d.Read(buf); !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("step 6: read from a closed end: err %v, want io.ErrClosedPipe", err)
		}
	})
}
