package live

import (
	"fmt"
	"testing"

	"stampede/scenarios"
)

// The built-in pair keeps its backend's connections alive, so the backend
// cannot hold a connection in an accept queue until a worker is free, as
// gunicorn's listen socket does: one connection carries request after
// request. Its listen backlog is therefore played by the backend's pool
// (fakebackend.Config.Backlog and Overflow) as each request arrives: a
// request over the backlog waits on the client's SYN schedule in model time
// (drop), or is answered 502 at once (reset), and the proxy's
// connect_timeout bounds the wait. The in-memory listener's own queue is
// deep enough never to overflow first. The pool is the simulator's, so the
// emulation is what the simulator plays; TestSynctestBacklogOverflow holds
// the two to each other, request by request, for both overflow modes.

// backlogBurst is 30 requests at once into 2 workers of a second each
// behind a backlog of 8: 11 fit (Linux queues backlog+1), 19 overflow.
const backlogBurst = `
name: backlog-burst
duration: 60s
time_scale: 0.01
seed: 3
backend:
  workers: 2
  backlog: 8
  backlog_overflow: %s
  routes:
    - {name: work, path: /work, service: 1s}
proxy:
  read_timeout: 300s
tenants:
  - group: burst
    count: 1
    host: burst.example.com
    load: {model: closed, users: 30, think: 0s, iterations: 1, routes: {work: 1}, client_timeout: 5m}
`

func TestSynctestBacklogOverflow(t *testing.T) {
	for _, c := range []struct {
		overflow          string
		ok, backendErrors uint64
	}{
		{"drop", 30, 0},
		// Linux queues one connection more than the backlog.
		{"reset", 11, 19},
	} {
		t.Run(c.overflow, func(t *testing.T) {
			load := func() *scenarios.Scenario {
				sc, err := scenarios.ParseWith("backlog-burst.yaml", []byte(fmt.Sprintf(backlogBurst, c.overflow)), nil)
				if err != nil {
					t.Fatal(err)
				}
				return sc
			}
			liveRes := playSynctest(t, load())
			simRes := playSim(t, load())
			l, s := group(t, liveRes, "burst"), group(t, simRes, "burst")
			if l.OK != c.ok || l.BackendErrors != c.backendErrors || s.OK != c.ok || s.BackendErrors != c.backendErrors {
				t.Errorf("live %d ok, %d × 502; sim %d ok, %d × 502; want %d ok, %d × 502",
					l.OK, l.BackendErrors, s.OK, s.BackendErrors, c.ok, c.backendErrors)
			}
			for _, q := range []struct {
				name      string
				live, sim float64
			}{{"p50", l.Latency.P50, s.Latency.P50}, {"p99", l.Latency.P99, s.Latency.P99}, {"max", l.Latency.Max, s.Latency.Max}} {
				if d := relDiff(q.live, q.sim); d > 0.01 {
					t.Errorf("%s live %.1f ms, sim %.1f ms: %.2f%% apart, want within 1%%", q.name, q.live, q.sim, 100*d)
				}
			}
			t.Logf("%s: live %d ok, %d × 502, p50 %.0f p99 %.0f max %.0f ms; sim p50 %.0f p99 %.0f max %.0f ms",
				c.overflow, l.OK, l.BackendErrors, l.Latency.P50, l.Latency.P99, l.Latency.Max, s.Latency.P50, s.Latency.P99, s.Latency.Max)
		})
	}
}
