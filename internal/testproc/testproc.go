package testproc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// StopWithin is how long a child has to exit once told to stop, at the
// end of its test, before it is killed.
const StopWithin = 10 * time.Second

// pollEvery is how often Wait asks whether what it waits for is there.
const pollEvery = 20 * time.Millisecond

// ErrExited is Wait's error when the child exited before it was ready.
var ErrExited = errors.New("exited first")

// WriteFile writes data to the file name in dir, for a program's
// configuration or code, and returns its path. It fails the test when the
// file cannot be written.
func WriteFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
	return path
}

// Wait calls ready at once and then every 20 ms until it returns true, and
// returns nil. It returns ErrExited when exited is closed first, and an
// error naming within when that much time passes first.
func Wait(within time.Duration, exited <-chan struct{}, ready func() bool) error {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	poll := time.NewTicker(pollEvery)
	defer poll.Stop()
	for !ready() {
		select {
		case <-exited:
			return ErrExited
		case <-deadline.C:
			return fmt.Errorf("not within %v", within)
		case <-poll.C:
		}
	}
	return nil
}

// Process is a program started by Start, running until its test ends.
type Process struct {
	name   string
	out    Output
	exited chan struct{} // closed once the program has exited, with err set
	err    error
}

// Start starts cmd, with its stdout and stderr kept (Log), until the test
// ends: then it sends cmd stop (the program's quick shutdown), kills it if
// it has not exited within StopWithin, and, if the test failed, logs
// describe and the program's output. It fails the test when cmd does not
// start.
func Start(t testing.TB, cmd *exec.Cmd, stop os.Signal, describe string) *Process {
	t.Helper()
	p := &Process{name: filepath.Base(cmd.Path), exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(stop)
		select {
		case <-p.exited:
		case <-time.After(StopWithin):
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("%s\n%s's output:\n%s", describe, p.name, p.out.String())
		}
	})
	return p
}

// Log returns what the program has written so far.
func (p *Process) Log() string { return p.out.String() }

// Wait is the package's Wait for this program: it returns an error that
// wraps ErrExited, with how the program ended, when it exits before ready
// returns true.
func (p *Process) Wait(within time.Duration, ready func() bool) error {
	err := Wait(within, p.exited, ready)
	if errors.Is(err, ErrExited) {
		return fmt.Errorf("%w: %v", err, p.err)
	}
	return err
}

// Output is a bytes.Buffer that a program's output copier, or a command
// run in-process, may write while the test reads it. The zero value is
// empty and ready; it is safe for concurrent use.
type Output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

// String returns what has been written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}
