package workerpool

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// TestPoolConfigDefaults: a pool plays the zero values a Config documents
// (Workers 0 and below means 1, Backlog 0 DefaultBacklog, negative none).
func TestPoolConfigDefaults(t *testing.T) {
	cases := []struct {
		cfg              Config
		workers, backlog int
	}{
		{Config{Overflow: Reset}, 1, DefaultBacklog},
		{Config{Workers: 8, Backlog: 10, Overflow: Reset}, 8, 10},
		{Config{Workers: -3, Backlog: -1, Overflow: Reset}, 1, 0},
	}
	for n, c := range cases {
		p := NewPool(c.cfg)
		s := p.Stats(0)
		if s.Workers != c.workers || s.Backlog != c.backlog {
			t.Errorf("step %d: NewPool(%+v): workers %d backlog %d, want %d and %d", n, c.cfg, s.Workers, s.Backlog, c.workers, c.backlog)
		}
		if p.Config() != c.cfg {
			t.Errorf("step %d: Config() = %+v, want %+v", n, p.Config(), c.cfg)
		}
		// Fill the workers and the accept queue (Linux's holds one more
		// than the backlog), then one more is refused.
		q := c.backlog + 1
		if c.cfg.Backlog < 0 {
			q = 0
		}
		for i := range c.workers + q {
			if st := p.Arrive(0, &Job{}); st == Refused {
				t.Fatalf("step %d: arrival %d refused, want room for %d workers + %d backlog", n, i, c.workers, c.backlog)
			}
		}
		if st := p.Arrive(0, &Job{}); st != Refused {
			t.Errorf("step %d: arrival past workers+backlog: got %v, want refused", n, st)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for i, c := range []struct {
		cfg  Config
		want []string // "field: message" of every FieldError, in order
	}{
		{Config{}, nil},
		{Config{Workers: MaxWorkers, Threads: MaxThreads, Backlog: MaxBacklog, Timeout: MaxTimeout, Boot: MaxBoot,
			MaxRequests: MaxMaxRequests, MaxRequestsJitter: MaxMaxRequests, OnClientAbort: Cancel, Overflow: Reset}, nil},
		{Config{Backlog: -1}, nil},
		{Config{Workers: 70000}, []string{"workers: 70000 is over 65536"}},
		{Config{Workers: -1}, []string{"workers: -1 is below 0"}},
		{Config{Threads: MaxThreads + 1}, []string{"threads: 1001 is over 1000"}},
		{Config{Backlog: MaxBacklog + 1}, []string{"backlog: 1048577 is over 1048576"}},
		{Config{Timeout: MaxTimeout + time.Second}, []string{"timeout: 720h0m1s is longer than 720h"}},
		{Config{Timeout: -time.Second}, []string{"timeout: -1s is negative"}},
		{Config{Boot: 2 * time.Hour}, []string{"boot: 2h is longer than 1h"}},
		{Config{MaxRequests: -1, MaxRequestsJitter: math.MinInt}, []string{"max_requests: -1 is below 0", fmt.Sprintf("max_requests_jitter: %d is below 0", math.MinInt)}},
		{Config{OnClientAbort: 7, Overflow: 9}, []string{"on_client_abort: 7 is not continue or cancel", "backlog_overflow: 9 is not drop or reset"}},
	} {
		err := c.cfg.Validate()
		var got []string
		for _, fe := range FieldErrors(fmt.Errorf("wrapped: %w", err)) {
			got = append(got, fe.Error())
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("case %d: Validate() gives %q, want %q", i, got, c.want)
		}
		if (err == nil) != (len(c.want) == 0) {
			t.Errorf("case %d: Validate() = %v, want an error %v", i, err, len(c.want) > 0)
		}
	}
}
