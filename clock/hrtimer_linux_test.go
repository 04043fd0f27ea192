package clock

import (
	"context"
	"testing"
	"time"
)

// TestTimerPoolCancel cancels a wait on a timerfd of an hour: it must end,
// and the timerfd, re-armed by the cancel, must not be lent again.
func TestTimerPoolCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go cancel()
	if !hr.sleep(ctx, time.Hour) {
		t.Skip("no timerfd here")
	}
	if ctx.Err() == nil {
		t.Fatal("sleep of an hour returned before its context was cancelled")
	}
	for i := range 20 {
		deadline := time.Now().Add(200 * time.Microsecond)
		if !Wait(context.Background(), deadline, true) {
			t.Fatalf("wait %d = false, want true", i)
		}
		if d := time.Until(deadline); d > 0 {
			t.Fatalf("wait %d woke %v early", i, d)
		}
	}
}
