package live

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"stampede/report"
	"stampede/scenarios"
	"stampede/sim"
	"stampede/workerpool"
)

// These tests play one scenario in both engines, live over loopback HTTP and
// sim in virtual time, and hold the results against each other (issue 5,
// "Live and sim agree"): per group, the rejected share within 0.03 absolute
// and p50 and p99 within 10%.
//
// The engines draw service times from different random streams: the sim
// from each tenant's stream, interleaved with its arrivals, the live backend
// from its own stream in the order requests reach it. A p99 estimated from a
// few thousand requests, and near saturation from a handful of busy periods,
// varies by more than 10% from one stream to the next, so two independent
// runs would disagree by chance and the test would measure the dice, not
// the engines. Both runs therefore draw from common random numbers
// (sharedDraws): the n-th request to reach a route gets the same service
// time in both, and the tenants' arrivals, which both engines take from
// workload.TenantRand, are then the same too. What is left to differ is what
// the test is about: the live run's timers, queue and HTTP against the
// simulator's model of them.

// Agreement tolerances of issue 5.
const (
	agreeRejected = 0.03 // rejected share, absolute
	agreeLatency  = 0.10 // p50 and p99, relative to the sim's
)

// sharedDraws is a workerpool.Dist that hands its callers one sequence of
// draws from Dist, out of its own seeded stream, whatever stream they pass:
// the n-th Sample returns the same duration in every run. It is safe for
// concurrent use (the live backend samples under its own lock, but says
// nothing of it).
type sharedDraws struct {
	workerpool.Dist
	mu  sync.Mutex
	rng *rand.Rand
}

func (s *sharedDraws) Sample(*rand.Rand) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Dist.Sample(s.rng)
}

// withSharedDraws gives every route of sc a fresh sharedDraws over its
// service distribution, seeded from the scenario's seed and the route.
func withSharedDraws(sc *scenarios.Scenario) *scenarios.Scenario {
	for i := range sc.Backend.Routes {
		r := &sc.Backend.Routes[i]
		r.Service = &sharedDraws{Dist: r.Service, rng: rand.New(rand.NewPCG(sc.Seed, uint64(i)))}
	}
	return sc
}

// playBoth plays the scenario load returns in both engines, each on a fresh
// copy with its own shared draws. The live run judges itself (see
// judge): an inconclusive one, whose own delays could explain a difference
// from the sim, is played once more, and when that one is inconclusive too
// the test is skipped with the reasons; it never passes on such a run and
// never fails on one. The slack returned is the delay the conclusive run
// measured of itself in model ms (the worst of its lateness at p99, its
// longest stall, its timers at p99 and its tare's drift): what the machine
// may have added to any latency, beyond the agreement the engines owe.
func playBoth(t *testing.T, load func(t *testing.T) *scenarios.Scenario) (liveRes, simRes *report.Results, slack float64) {
	t.Helper()
	ctx := context.Background()
	liveRes, slack = runJudged(t, func() *scenarios.Scenario { return withSharedDraws(load(t)) }, Options{})
	sc := withSharedDraws(load(t))
	rec := report.NewRecorder(sc)
	start := time.Now()
	st, err := sim.Simulate(ctx, sc, rec, sim.Options{Sampler: rec})
	if err != nil {
		t.Fatalf("sim: %v", err)
	}
	simRes = rec.Results(report.RunInfo{Engine: "sim", Wall: time.Since(start), Backend: st.Backend})
	t.Logf("live %.2f s wall, sim %.3f s wall for %.0f s of model time; the live run's own delay: %.1f ms of model time",
		liveRes.WallDurationS, simRes.WallDurationS, simRes.ModelDurationS, slack)
	return liveRes, simRes, slack
}

func rejectedShare(c report.Counts) float64 {
	if c.Requests == 0 {
		return 0
	}
	return float64(c.Rejected) / float64(c.Requests)
}

// relDiff is |got − want| / want.
func relDiff(got, want float64) float64 {
	if want == 0 {
		if got == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return math.Abs(got-want) / want
}

// agreement compares one group or route of the two runs.
type agreement struct {
	what         string // "group user-x", "route stock-balance"
	live, sim    report.Counts
	liveL, simL  report.Latency
	latency      bool    // compare p50 and p99 (false: service times too short next to HTTP)
	sameArrivals bool    // both engines saw the same requests
	slack        float64 // model ms the live run's own delay may add (see playBoth)
}

func (a agreement) check(t *testing.T) {
	t.Helper()
	t.Logf("%s: live %d requests, %d ok, %d rejected (%.3f), p50 %.1f ms, p99 %.1f ms; sim %d requests, %d ok, %d rejected (%.3f), p50 %.1f ms, p99 %.1f ms",
		a.what, a.live.Requests, a.live.OK, a.live.Rejected, rejectedShare(a.live), a.liveL.P50, a.liveL.P99,
		a.sim.Requests, a.sim.OK, a.sim.Rejected, rejectedShare(a.sim), a.simL.P50, a.simL.P99)
	if a.sim.Requests == 0 || a.sim.OK == 0 {
		t.Errorf("%s: sim: %d requests, %d ok; the comparison needs both", a.what, a.sim.Requests, a.sim.OK)
	}
	if a.sameArrivals && a.live.Requests != a.sim.Requests {
		t.Errorf("%s: live %d requests, sim %d; want the same arrivals in both", a.what, a.live.Requests, a.sim.Requests)
	}
	if d := math.Abs(rejectedShare(a.live) - rejectedShare(a.sim)); d > agreeRejected {
		t.Errorf("%s: rejected share live %.3f, sim %.3f: %.3f apart, want within %.2f",
			a.what, rejectedShare(a.live), rejectedShare(a.sim), d, agreeRejected)
	}
	if !a.latency {
		return
	}
	for _, q := range []struct {
		name      string
		live, sim float64
	}{{"p50", a.liveL.P50, a.simL.P50}, {"p99", a.liveL.P99, a.simL.P99}} {
		if d := math.Abs(q.live - q.sim); d > agreeLatency*q.sim+a.slack {
			t.Errorf("%s: %s live %.1f ms, sim %.1f ms: %.1f ms apart, want within %.0f%% plus the run's own delay of %.1f ms",
				a.what, q.name, q.live, q.sim, d, 100*agreeLatency, a.slack)
		}
	}
}

func groupAgreement(t *testing.T, liveRes, simRes *report.Results, slack float64, name string, latency bool) agreement {
	t.Helper()
	l, s := group(t, liveRes, name), group(t, simRes, name)
	return agreement{what: "group " + name, live: l.Counts, sim: s.Counts, liveL: l.Latency, simL: s.Latency, latency: latency, sameArrivals: true, slack: slack}
}

func routeAgreement(t *testing.T, liveRes, simRes *report.Results, slack float64, name string) agreement {
	t.Helper()
	find := func(res *report.Results) report.RouteResult {
		for _, r := range res.Routes {
			if r.Name == name {
				return r
			}
		}
		t.Fatalf("results have no route %q", name)
		return report.RouteResult{}
	}
	l, s := find(liveRes), find(simRes)
	return agreement{what: "route " + name, live: l.Counts, sim: s.Counts, liveL: l.Latency, simL: s.Latency, latency: true, sameArrivals: true, slack: slack}
}

// stockBalanceSets shrink the library's stock-balance story to what a busy
// 2-core machine serves over real HTTP under the race detector while it
// keeps its point: 25 other sites instead of 249 (167 page requests a wall
// second at the library's time scale of 0.03 instead of 1,660), and 5
// minutes of load instead of 10, which still hold user-x's 8 tabs of the
// 2–4 minute report from 1m to their end against limit_conn $host 4. The
// 1,500 pages make a p99 that one late request does not move.
var stockBalanceSets = []string{
	"time_scale=0.03",
	"tenants.other-sites.count=25",
	"duration=5m",
}

// checkStory checks the stock-balance story in the results of each engine:
// 4 of user-x's tabs get through, 4 are refused with 503, and the other
// sites are never refused.
func checkStory(t *testing.T, results ...*report.Results) {
	t.Helper()
	for _, res := range results {
		x := group(t, res, "user-x")
		if x.Requests != 8 || x.OK != 4 || x.Rejected != 4 || x.Status["503"] != 4 {
			t.Errorf("%s: user-x %d requests, %d ok, %d rejected, statuses %v; want 8, 4, 4 × 503", res.Engine, x.Requests, x.OK, x.Rejected, x.Status)
		}
		if o := group(t, res, "other-sites"); o.Rejected != 0 || o.OK != o.Requests {
			t.Errorf("%s: other-sites %d ok and %d rejected of %d; want all ok", res.Engine, o.OK, o.Rejected, o.Requests)
		}
	}
}

func TestAgreeStockBalance(t *testing.T) {
	liveRes, simRes, slack := playBoth(t, func(t *testing.T) *scenarios.Scenario {
		sc, err := scenarios.LoadWith("../scenarios/stock-balance.yaml", stockBalanceSets)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	})

	checkStory(t, liveRes, simRes)

	// The report's 2–4 minutes are 1.2–2.4 s of wall time: HTTP's fraction
	// of a millisecond is lost in them, and user-x's latencies are compared.
	groupAgreement(t, liveRes, simRes, slack, "user-x", true).check(t)
	routeAgreement(t, liveRes, simRes, slack, "stock-balance").check(t)
	// A page's 30 ms median is 0.9 ms of wall time at time scale 0.03, less
	// than the HTTP path through proxy and backend costs: the live engine
	// takes that cost off with a tare it keeps measuring during the run,
	// and the pages' latencies must then agree too. The race detector
	// triples the path's cost and its jitter, which no tare takes off, so
	// a race build compares their counts alone.
	groupAgreement(t, liveRes, simRes, slack, "other-sites", !raceBuild).check(t)
}

// nearSaturation is an M/M/16 queue at 85% utilisation: Poisson arrivals
// at 6.8 requests a second, half from twelve small sites and half from a big
// one, exponential service of 2 s mean on 16 workers and no limit, so that
// requests wait in the backlog and their latencies grow Erlang C's long
// tail. At time scale 0.1 a service time is 200 ms of wall time on average:
// the few milliseconds a request costs in HTTP on a busy machine under the
// race detector are lost in it. The 200 s of model time take 20 s of wall
// time for about 1,350 requests, enough that one late request does not move
// a group's p99. (Four workers at the same wall cost would give a quarter of
// the requests, and p99s that a single request moves by 10%.)
const nearSaturation = `
name: near-saturation
description: Poisson arrivals at 85% of 16 workers' capacity, exponential service, no limit.
duration: 200s
time_scale: 0.1
seed: 7
backend:
  workers: 16
  routes:
    - {name: work, path: /work, service: "exp:2s"}
tenants:
  - group: small-sites
    count: 12
    host: small{i}.example.com
    load: {model: open, arrivals: poisson, rate: 17/m, routes: {work: 1}, client_timeout: 1m}
  - group: big-site
    count: 1
    host: big.example.com
    load: {model: open, arrivals: poisson, rate: 204/m, routes: {work: 1}, client_timeout: 1m}
`

func TestAgreePoissonNearSaturation(t *testing.T) {
	liveRes, simRes, slack := playBoth(t, func(t *testing.T) *scenarios.Scenario {
		sc, err := scenarios.ParseWith("near-saturation.yaml", []byte(nearSaturation), nil)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	})
	for _, g := range []string{"small-sites", "big-site"} {
		groupAgreement(t, liveRes, simRes, slack, g, true).check(t)
	}
	// The queue must really have formed, or the test says nothing about it.
	if u := simRes.Backend.Utilization; u < 0.75 || u > 0.95 {
		t.Errorf("sim utilisation %.3f, want about 0.85", u)
	}
	if q := simRes.Backend.QueueMax; q < 5 {
		t.Errorf("sim queue max %d, want a queue", q)
	}
	t.Logf("utilisation live %.3f sim %.3f; queue max live %d sim %d",
		liveRes.Backend.Utilization, simRes.Backend.Utilization, liveRes.Backend.QueueMax, simRes.Backend.QueueMax)
}
