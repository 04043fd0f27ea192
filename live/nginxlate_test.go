package live

import (
	"context"
	"testing"

	"stampede/fakebackend"
	"stampede/internal/nginxtest"
	"stampede/scenarios"
)

// TestNginxOpenSendsOnTime drives real nginx at time scale 1 with an open
// load of 20 requests a second into a backend of two workers that takes a
// second a request, so that the backend's queue grows through the run and
// nginx holds every request: the open model's sends must still go out on
// time, never waiting for a connection or an answer (seen: sends 3.6 s
// late at p99 while the backend queued).
func TestNginxOpenSendsOnTime(t *testing.T) {
	nginxtest.Require(t)
	sc, err := scenarios.ParseWith("queued.yaml", []byte(queuedBehindNginx), nil)
	if err != nil {
		t.Fatal(err)
	}
	backend := startScenarioBackend(t, sc)
	proxy := startNginxFor(t, sc, backend)
	res, err := runResults(context.Background(), sc, Options{Target: proxy, BackendStatsURL: backend + fakebackend.StatsPath})
	if err != nil {
		t.Fatalf("live run through nginx: %v", err)
	}
	l := res.SendLateness
	if l == nil || l.Sends == 0 {
		t.Fatalf("no send lateness recorded: %+v", res.Totals)
	}
	t.Logf("%d requests, %d ok, %d client timeouts; sends late p50 %.3f ms, p99 %.3f ms, max %.3f ms",
		res.Totals.Requests, res.Totals.OK, res.Totals.ClientTimeouts, l.P50, l.P99, l.Max)
	if res.Totals.ClientTimeouts == 0 {
		t.Errorf("no client timeouts: want requests held past the 4 s client timeout (%+v)", res.Totals)
	}
	// A send that waited for a connection or an answer would be late by
	// the backend's second or more; the bound leaves a busy machine's
	// scheduling delays far below that.
	if l.P99 > 250 {
		t.Errorf("sends late by %.1f ms at p99 (max %.1f ms), want under 250 ms: an open-model send waited", l.P99, l.Max)
	}
}

// queuedBehindNginx is 20 requests a second into two workers of a second
// each: the backend's queue grows by 18 a second.
const queuedBehindNginx = `
name: queued
duration: 8s
time_scale: 1
seed: 1
backend:
  workers: 2
  routes:
    - {name: slow, path: /slow, service: 1s}
proxy:
  read_timeout: 60s
tenants:
  - group: sites
    count: 4
    host: site{i}.example.com
    load: {model: open, arrivals: poisson, rate: 5/s, routes: {slow: 1}, client_timeout: 4s}
`
