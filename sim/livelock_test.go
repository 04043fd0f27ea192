package sim

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"stampede/scenarios"
	"stampede/workload"
)

// TestNoLivelock plays scenarios in which a closed-model user with think:
// 0s could resend at one model instant forever (issue 16: 16M requests at
// model time 0, and compare hung). Each must end, its model time must move
// on, and it must take a number of events that a second of wall time holds
// many times over on any machine (the count is deterministic; a context
// deadline turns a hang into a failure rather than a stuck test).
func TestNoLivelock(t *testing.T) {
	const head = "duration: 2m\nseed: 1\n"
	tests := []struct {
		name      string
		body      string
		maxEvents uint64 // want fewer
		group     string // whose requests must include rejected or failed ones
	}{
		{
			name: "rejected by limit_conn, think 0",
			body: `backend: {workers: 4, routes: [{name: r, path: /, service: 1m}]}
proxy: {limit_conn: {key: $host, per_key: 1}}
tenants:
  - {group: x, host: x.example, load: {model: closed, users: 8, think: 0s}}`,
			maxEvents: 20_000, group: "x",
		},
		{
			name: "rejected by limit_req, think 0",
			body: `backend: {workers: 4, routes: [{name: r, path: /, service: 10ms}]}
proxy: {limit_req: {key: $host, rate: 1r/s, burst: 0, nodelay: true}}
tenants:
  - {group: x, host: x.example, load: {model: closed, users: 50, think: 0s}}`,
			maxEvents: 200_000, group: "x",
		},
		{
			name: "refused by a full backend, think 0",
			body: `backend: {workers: 1, backlog: 0, routes: [{name: r, path: /, service: 30s}]}
tenants:
  - {group: x, host: x.example, load: {model: closed, users: 10, think: 0s}}`,
			maxEvents: 50_000, group: "x",
		},
		{
			name: "answered in no time, think 0",
			body: `backend: {workers: 1, routes: [{name: r, path: /, service: 0s}]}
tenants:
  - {group: x, host: x.example, load: {model: closed, users: 3, think: 0s}}`,
			maxEvents: 2_000_000,
		},
		{
			name: "the incident with think 0 and retries on timeout",
			body: `backend: {workers: 2, backlog: 4, timeout: 30s, routes: [{name: r, path: /, service: 1m}]}
proxy: {read_timeout: 10s, limit_conn: {key: $host, per_key: 2}}
tenants:
  - {group: x, host: x.example, load: {model: closed, users: 20, think: 0s, client_timeout: 5s}}
  - {group: quiet, count: 5, host: "q{i}.example", load: {rate: 1/s}}`,
			maxEvents: 100_000, group: "x",
		},
	}
	for _, tt := range tests {
		sc, err := scenarios.Parse(tt.name+".yaml", []byte("name: livelock\n"+head+tt.body+"\n"))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		st, err := Simulate(ctx, sc, nil, Options{})
		wall := time.Since(start)
		cancel()
		if err != nil {
			t.Errorf("%s: Run: %v (after %d events, model time %v)", tt.name, err, st.Events, st.End)
			continue
		}
		if st.Events >= tt.maxEvents || st.Requests == 0 {
			t.Errorf("%s: %d events for %d requests, want some requests and fewer than %d events", tt.name, st.Events, st.Requests, tt.maxEvents)
		}
		if st.End < sc.Duration-time.Second {
			t.Errorf("%s: the run ended at model time %v, want about its duration %v", tt.name, st.End, sc.Duration)
		}
		if tt.group != "" && st.Outcomes[workload.OK] == st.Requests {
			t.Errorf("%s: every request ok (%v): the scenario no longer provokes resends", tt.name, st.Outcomes)
		}
		t.Logf("%s: %d events, %d requests %v, %v of wall time", tt.name, st.Events, st.Requests, st.Outcomes, wall)
	}
}

func TestGuard(t *testing.T) {
	g := guard{stall: 3, max: math.MaxUint64, at: -1}
	steps := []struct {
		at   time.Duration
		fail bool
	}{{0, false}, {0, false}, {0, false}, {0, false}, {time.Millisecond, false}, {time.Millisecond, false}, {time.Millisecond, false}, {time.Millisecond, false}, {time.Millisecond, true}}
	for i, s := range steps {
		if ok := g.ok(s.at); ok == s.fail || !ok && !errors.Is(g.err(), ErrStalled) {
			t.Errorf("step %d: ok(%v) = %v (%v), want failure %v", i, s.at, ok, g.err(), s.fail)
		}
	}
	g = guard{stall: 100, max: 5, at: -1}
	for i := range 5 {
		if ok, want := g.ok(time.Duration(i)), i == 4; ok == want || !ok && !errors.Is(g.err(), ErrEventLimit) {
			t.Errorf("event %d of at most 5: ok = %v (%v), want failure %v", i+1, ok, g.err(), want)
		}
	}
	// Run reports the limit as an error naming the scenario.
	sc, err := scenarios.Parse("s.yaml", []byte("name: s\nduration: 1m\nbackend: {routes: [{name: r, path: /, service: 1ms}]}\ntenants: [{group: a, host: a.example, load: {rate: 100/s}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), sc, nil, Options{MaxEvents: 1000}); !errors.Is(err, ErrEventLimit) || !strings.Contains(err.Error(), "scenario s") {
		t.Errorf("MaxEvents 1000: Run = %v, want ErrEventLimit naming the scenario", err)
	}
}
