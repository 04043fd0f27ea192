package workload

import (
	"testing"
	"time"
)

func TestNextSend(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name                 string
		intended, end, think time.Duration
		o                    Outcome
		want                 time.Duration
	}{
		{"ok, think", 0, 30 * ms, 5 * time.Second, OK, 30*ms + 5*time.Second},
		{"ok, no think", 0, 30 * ms, 0, OK, 30 * ms},
		{"ok in no time, no think", 10 * ms, 10 * ms, 0, OK, 10*ms + MinCycle},
		{"rejected at once, no think", 0, 0, 0, Rejected, MinResend},
		{"rejected, think longer than the floor", 0, 0, time.Second, Rejected, time.Second},
		{"502, short think", 0, 2 * ms, 100 * ms, BackendError, 2*ms + MinResend},
		{"client timeout", 0, 30 * time.Second, 0, ClientTimeout, 30*time.Second + MinResend},
		{"negative think", 0, 5 * ms, -time.Second, OK, 5 * ms},
	}
	for _, tt := range tests {
		if got := NextSend(tt.intended, tt.end, tt.think, tt.o); got != tt.want {
			t.Errorf("%s: NextSend(%v, %v, %v, %v) = %v, want %v", tt.name, tt.intended, tt.end, tt.think, tt.o, got, tt.want)
		}
	}
}
