package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// interruptSignals end a run early: its partial results are still written
// (exit 130). SIGHUP is among them, so that closing the terminal keeps what
// was played.
var interruptSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// notifyContext returns a context cancelled by the first of
// interruptSignals. Later ones do not kill the process while it writes the
// partial results: they are told to w. stop restores the default handling.
func notifyContext(w io.Writer) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, interruptSignals...)
	done := make(chan struct{})
	go func() {
		defer close(done)
		n := 0
		for s := range sigs {
			if n++; n == 1 {
				cancel()
				continue
			}
			fmt.Fprintf(w, "stampede: %v again: still writing the partial results (kill -9 would lose them)\n", s)
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(sigs)
		<-done
		cancel()
	}
}
