package main

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"stampede/internal/testproc"
)

// TestSecondSignal: a SIGHUP interrupts like Ctrl-C, and a second signal
// does not kill the process while it writes the partial results.
func TestSecondSignal(t *testing.T) {
	var w testproc.Output
	ctx, stop := notifyContext(&w)
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGHUP did not cancel the run's context")
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(w.String(), "still writing the partial results"); {
		if time.Now().After(deadline) {
			t.Fatalf("a second signal said %q, want that the partial results are still being written", w.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestNoSubcommand(t *testing.T) {
	code, stdout, stderr := runCLI(t, context.Background())
	if code != exitUsage || !strings.Contains(stderr, "Available Commands") || stdout != "" {
		t.Errorf("stampede alone: exit %d, stdout %q, stderr %q; want 2 and the help on stderr", code, stdout, stderr)
	}
}
