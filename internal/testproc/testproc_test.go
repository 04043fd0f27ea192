package testproc

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestStartWaitStop runs a child that says it is ready and then waits to
// be stopped, waits for its word, and checks that the end of the test
// stops it.
func TestStartWaitStop(t *testing.T) {
	var p *Process
	t.Run("child", func(t *testing.T) {
		p = Start(t, exec.Command("sh", "-c", "echo ready; exec sleep 60"), syscall.SIGTERM, "sh that sleeps")
		if err := p.Wait(StopWithin, func() bool { return strings.Contains(p.Log(), "ready\n") }); err != nil {
			t.Fatalf("Wait for the child's word: %v (output %q)", err, p.Log())
		}
	})
	select {
	case <-p.exited:
	default:
		t.Fatal("the child still runs after its test ended")
	}
	if p.err == nil {
		t.Errorf("the child exited cleanly; want it ended by the stop signal")
	}
}

// TestWaitExited checks that Wait gives up when the child exits first, and
// says how it ended.
func TestWaitExited(t *testing.T) {
	p := Start(t, exec.Command("sh", "-c", "echo bye; exit 3"), syscall.SIGTERM, "sh that exits")
	err := p.Wait(StopWithin, func() bool { return false })
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("Wait on a child that exits 3 = %v, want ErrExited with exit status 3", err)
	}
	if got := p.Log(); got != "bye\n" {
		t.Errorf("Log() = %q, want %q", got, "bye\n")
	}
}

// TestWaitWithin checks that Wait gives up after within when nothing
// comes, and returns at once when ready already holds.
func TestWaitWithin(t *testing.T) {
	calls := 0
	err := Wait(pollEvery, nil, func() bool { calls++; return false })
	if err == nil || errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "not within") {
		t.Errorf("Wait that never gets ready = %v, want a time-out", err)
	}
	if calls < 1 {
		t.Errorf("Wait asked %d times, want at least once", calls)
	}
	if err := Wait(0, nil, func() bool { return true }); err != nil {
		t.Errorf("Wait when already ready = %v, want nil", err)
	}
}

// TestListenDials checks that Listen gives a loopback listener, and that
// Dials sees it, and no longer once it is closed.
func TestListenDials(t *testing.T) {
	ln := Listen(t)
	addr := ln.Addr().String()
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("Listen's address = %q, want 127.0.0.1:PORT", addr)
	}
	if !Dials(addr) {
		t.Errorf("Dials(%s) = false with a listener there", addr)
	}
	ln.Close()
	if Dials(addr) {
		t.Errorf("Dials(%s) = true after the listener closed", addr)
	}
}

// TestRefusing checks that nothing accepts connections at Refusing's
// address, and that no listener can take its port while the test runs.
func TestRefusing(t *testing.T) {
	addr := Refusing(t)
	if Dials(addr) {
		t.Errorf("Dials(%s) = true at a refusing port", addr)
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Errorf("listen on the refusing %s: no error, want the port held", addr)
	}
}

// TestWriteFile checks that WriteFile's file is in dir and holds the data.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := WriteFile(t, dir, "app.conf", []byte("workers 2\n"))
	if filepath.Dir(path) != dir || filepath.Base(path) != "app.conf" {
		t.Errorf("WriteFile's path = %s, want %s/app.conf", path, dir)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "workers 2\n" {
		t.Errorf("the file holds %q, %v; want %q", b, err, "workers 2\n")
	}
}

// TestListen checks that Listen's listener is on loopback and accepts, and
// that it is closed once its test has ended.
func TestListen(t *testing.T) {
	var ln net.Listener
	t.Run("listen", func(t *testing.T) {
		ln = Listen(t)
		if !strings.HasPrefix(ln.Addr().String(), "127.0.0.1:") {
			t.Fatalf("Listen's address = %s, want 127.0.0.1:PORT", ln.Addr())
		}
		if !Dials(ln.Addr().String()) {
			t.Errorf("Dials(%s) = false with Listen's listener there", ln.Addr())
		}
	})
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after the test ended: err %v, want net.ErrClosed", err)
	}
}
