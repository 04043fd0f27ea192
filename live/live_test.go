package live

import (
	"context"
	"errors"
	"math"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"stampede/fakebackend"
	"stampede/internal/testproc"
	"stampede/limit"
	"stampede/report"
	"stampede/scenarios"
	"stampede/workerpool"
	"stampede/workload"
)

// These tests play small scenarios over loopback in real time, each in well
// under a second of wall time, and assert counts that do not depend on the
// machine's speed.

func route(name, path string, service time.Duration) scenarios.Route {
	return scenarios.Route{Name: name, Path: path, Service: workerpool.Constant{D: service}}
}

func one(r int) []scenarios.WeightedRoute { return []scenarios.WeightedRoute{{Route: r, Weight: 1}} }

func group(t *testing.T, res *report.Results, name string) report.GroupResult {
	t.Helper()
	for _, g := range res.Groups {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("results have no group %q (groups %+v)", name, res.Groups)
	return report.GroupResult{}
}

func arrivals(load *scenarios.Load, horizon time.Duration, seed uint64, tenant int) uint64 {
	a := workload.NewArrivals(load, horizon, workload.TenantRand(seed, tenant))
	var n uint64
	for {
		if _, ok := a.Next(); !ok {
			return n
		}
		n++
	}
}

// runResults plays sc into a recorder of its own and returns results.json.
func runResults(ctx context.Context, sc *scenarios.Scenario, opts Options) (*report.Results, error) {
	rec := report.NewRecorder(sc)
	info, err := Run(ctx, sc, rec, opts)
	if err != nil {
		return nil, err
	}
	res := rec.Results(info)
	Explain(res, sc)
	return res, nil
}

func run(t *testing.T, ctx context.Context, sc *scenarios.Scenario, opts Options) *report.Results {
	t.Helper()
	res, err := runResults(ctx, sc, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func TestRunTiny(t *testing.T) {
	sc := &scenarios.Scenario{
		Name: "tiny", Duration: 10 * time.Second, TimeScale: 0.1, Seed: 3,
		Backend: scenarios.Backend{Workers: 4, Routes: []scenarios.Route{
			route("page", "/app", 20*time.Millisecond), route("report", "/report", 50*time.Millisecond)}},
		Tenants: []scenarios.TenantGroup{
			{Group: "sites", Count: 2, Host: "site{i}.example.com", Load: scenarios.Load{
				Model: scenarios.Open, Arrivals: scenarios.Constant, Rate: 2, Routes: one(0), ClientTimeout: 10 * time.Second}},
			{Group: "user", Count: 1, Host: "user.example.com", Load: scenarios.Load{
				Model: scenarios.Closed, Users: 2, Iterations: 3, Routes: one(1), ClientTimeout: 10 * time.Second}},
		},
	}
	res := run(t, context.Background(), sc, Options{Version: "test"})
	if res.Engine != "live" || res.Interrupted || res.WallDurationS <= 0 || res.Scenario != "tiny" {
		t.Errorf("results: engine %q interrupted %v wall %v scenario %q; want live, false, > 0, tiny",
			res.Engine, res.Interrupted, res.WallDurationS, res.Scenario)
	}
	wantSites := arrivals(&sc.Tenants[0].Load, sc.Duration, sc.Seed, 0) + arrivals(&sc.Tenants[0].Load, sc.Duration, sc.Seed, 1)
	for _, c := range []struct {
		name     string
		requests uint64
	}{{"sites", wantSites}, {"user", 6}} {
		g := group(t, res, c.name)
		if g.Requests != c.requests || g.OK != c.requests {
			t.Errorf("group %s: %d requests, %d ok; want %d and %d", c.name, g.Requests, g.OK, c.requests, c.requests)
		}
	}
	// The work takes 50 ms; the engine takes the path's measured tare off
	// every latency, so a request whose overhead came in under the tare
	// may show up to the tare less.
	if floor := 50 - res.TareMS/sc.TimeScale; res.Routes[1].OK != 6 || res.Routes[1].Latency.Min < floor {
		t.Errorf("route report: %d ok, min latency %v ms; want 6, at least %.1f ms (50 ms less the tare)", res.Routes[1].OK, res.Routes[1].Latency.Min, floor)
	}
	if res.Series == nil || len(res.Series.Backend) == 0 {
		t.Errorf("no backend samples in the series")
	}
}

// story is the incident at small scale: user-x opens 8 tabs of a one-minute
// report on an 8-worker server, with limit_conn $host 4. The report is long
// (600 ms of wall time) so that the 8 tabs overlap however busy the machine.
func story(perKey int) *scenarios.Scenario {
	sc := &scenarios.Scenario{
		Name: "story", Duration: 70 * time.Second, TimeScale: 0.01, Seed: 1,
		Backend: scenarios.Backend{Workers: 8, Routes: []scenarios.Route{
			route("page", "/app", 30*time.Millisecond), route("report", "/api/report", time.Minute)}},
		Proxy: scenarios.Proxy{ReadTimeout: 120 * time.Second},
		Tenants: []scenarios.TenantGroup{
			{Group: "other-sites", Count: 3, Host: "site{i}.example.com", Load: scenarios.Load{
				Model: scenarios.Open, Arrivals: scenarios.Poisson, Rate: 0.2, Routes: one(0), ClientTimeout: time.Minute}},
			{Group: "user-x", Count: 1, Host: "x.example.com", Load: scenarios.Load{
				Model: scenarios.Closed, Users: 8, Iterations: 1, Start: time.Second, Routes: one(1), ClientTimeout: 5 * time.Minute}},
		},
	}
	if perKey > 0 {
		sc.Proxy.Limits.Conn = []limit.ConnSpec{{Key: "$host", PerKey: perKey}}
	}
	return sc
}

func TestRunStoryLimitConn(t *testing.T) {
	res := run(t, context.Background(), story(4), Options{})
	x := group(t, res, "user-x")
	if x.Requests != 8 || x.OK != 4 || x.Rejected != 4 {
		t.Errorf("user-x: %d requests, %d ok, %d rejected; want 8, 4, 4", x.Requests, x.OK, x.Rejected)
	}
	if x.Status["503"] != 4 {
		t.Errorf("user-x statuses %v, want 4 × 503", x.Status)
	}
	// The other sites never reach 4 requests in flight each: the limit
	// leaves them alone.
	o := group(t, res, "other-sites")
	if o.Requests == 0 || o.OK == 0 || o.Rejected != 0 {
		t.Errorf("other-sites: %d ok, %d rejected of %d; want some ok and none rejected (%+v)", o.OK, o.Rejected, o.Requests, o.Counts)
	}
	if res.Backend.BusyMax > 8 || res.Backend.BusyMax < 4 {
		t.Errorf("backend busy max %d, want 4..8", res.Backend.BusyMax)
	}
	if res.Series == nil || res.Series.Limit != 4 {
		t.Errorf("series limit: want 4, got %+v", res.Series)
	}
}

func TestRunFidelity(t *testing.T) {
	// A constant 1 s route at low load, played faster than real time: the
	// median must come back within 2% of 1000 ms of model time. The engine
	// paces its sends early by the timers' usual lateness and keeps
	// measuring the path's own overhead while the run goes on, taking it
	// off every latency; what is left is jitter. Measured on a 2-core VM:
	// medians 996.9-999.9 ms at 0.03 (the library's stock-balance) and
	// 985.1-1000.4 ms at 0.01, ten runs each.
	// The race detector's instrumentation costs about that much again, so
	// a race build plays both ten times slower.
	for _, c := range []struct {
		scale, tolerance float64
	}{{0.03, 0.02}, {0.01, 0.02}} {
		scale := c.scale
		if raceBuild {
			scale *= 10
		}
		sc := &scenarios.Scenario{
			Name: "fidelity", Duration: 60 * time.Second, TimeScale: scale, Seed: 1,
			Backend: scenarios.Backend{Workers: 8, Routes: []scenarios.Route{route("one-second", "/", time.Second)}},
			Tenants: []scenarios.TenantGroup{{Group: "g", Count: 1, Host: "g.example.com", Load: scenarios.Load{
				Model: scenarios.Open, Arrivals: scenarios.Constant, Rate: 2, Routes: one(0), ClientTimeout: 10 * time.Second}}},
		}
		res, slack := runJudged(t, func() *scenarios.Scenario { c := *sc; return &c }, Options{})
		g := group(t, res, "g")
		if g.OK < 100 || g.OK != g.Requests {
			t.Fatalf("scale %v: %d ok of %d requests, want all of at least 100 (%+v)", scale, g.OK, g.Requests, g.Counts)
		}
		if res.TareMS <= 0 {
			t.Errorf("scale %v: tare %v ms, want the path's overhead measured", scale, res.TareMS)
		}
		if p50 := g.Latency.P50; math.Abs(p50-1000) > 1000*c.tolerance+slack {
			t.Errorf("scale %v: p50 %.1f ms, want 1000 ± %.0f%% plus the run's own delay of %.1f ms (tare %.3f ms wall; latency %+v)", scale, p50, 100*c.tolerance, slack, res.TareMS, g.Latency)
		} else {
			t.Logf("scale %v: p50 %.1f ms, p99 %.1f ms, max %.1f ms, tare %.3f ms wall, sends late %+v", scale, p50, g.Latency.P99, g.Latency.Max, res.TareMS, *res.SendLateness)
		}
	}
}

func TestRunInterrupted(t *testing.T) {
	sc := story(4)
	sc.Duration = time.Hour // 36 s of wall time: only the cancellation ends it
	// Calibration takes the first tenth of a second or so.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	res := run(t, ctx, sc, Options{})
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Run took %v after the cancellation at 1 s, want prompt", took)
	}
	if !res.Interrupted {
		t.Errorf("interrupted: got false, want true")
	}
	if res.Totals.Requests == 0 {
		t.Errorf("no requests recorded in 1 s")
	}
	if res.ModelDurationS >= 3600 {
		t.Errorf("model duration %v s, want how far the run got", res.ModelDurationS)
	}
}

func TestRunClientTimeoutAbandons(t *testing.T) {
	// One tab of a 30 s report with a 5 s client timeout, giving up: the
	// proxy frees the key's slot, but the worker goes on (continue).
	sc := &scenarios.Scenario{
		Name: "abandon", Duration: 10 * time.Second, TimeScale: 0.01, Seed: 1,
		Backend: scenarios.Backend{Workers: 2, OnClientAbort: workerpool.Continue,
			Routes: []scenarios.Route{route("report", "/report", 30*time.Second)}},
		Proxy: scenarios.Proxy{Limits: limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 4}}}},
		Tenants: []scenarios.TenantGroup{{Group: "x", Count: 1, Host: "x.example.com", Load: scenarios.Load{
			Model: scenarios.Closed, Users: 1, Iterations: 1, OnTimeout: scenarios.GiveUp,
			ClientTimeout: 5 * time.Second, Routes: one(0)}}},
	}
	res := run(t, context.Background(), sc, Options{})
	x := group(t, res, "x")
	if x.Requests != 1 || x.ClientTimeouts != 1 {
		t.Fatalf("x: %d requests, %d client timeouts; want 1 and 1", x.Requests, x.ClientTimeouts)
	}
	s := res.Series
	if s == nil || len(s.Backend) == 0 {
		t.Fatal("no backend samples")
	}
	// The last sample is taken after the load ended, at about 5 s of model
	// time: the worker is still on its 30 s report.
	if last := s.Backend[len(s.Backend)-1]; last.Busy != 1 || last.T < 5 || last.T >= 30 {
		t.Errorf("last backend sample %+v: want the worker still busy, between 5 s and 30 s", last)
	}
}

func TestRunDropsOverInFlightCap(t *testing.T) {
	sc := &scenarios.Scenario{
		Name: "drops", Duration: 10 * time.Second, TimeScale: 0.01, Seed: 1,
		Backend: scenarios.Backend{Workers: 8, Routes: []scenarios.Route{route("slow", "/", 3*time.Second)}},
		Tenants: []scenarios.TenantGroup{{Group: "g", Count: 1, Host: "g", Load: scenarios.Load{
			Model: scenarios.Open, Arrivals: scenarios.Constant, Rate: 5, MaxInFlight: 2, Routes: one(0)}}},
	}
	res := run(t, context.Background(), sc, Options{})
	g := group(t, res, "g")
	want := arrivals(&sc.Tenants[0].Load, sc.Duration, sc.Seed, 0)
	if g.Requests != want || g.OK+g.Dropped != want {
		t.Errorf("%d requests (%d ok, %d dropped), want %d arrivals all counted", g.Requests, g.OK, g.Dropped, want)
	}
	// Two in flight for 3 s each out of 5 arrivals a second: most drop.
	if g.Dropped < want/2 || g.OK < 2 {
		t.Errorf("%d dropped and %d ok of %d, want most dropped and some ok", g.Dropped, g.OK, want)
	}
}

func TestRunTarget(t *testing.T) {
	sc := story(0)
	b, err := fakebackend.New(fakebackend.Options{Pool: sc.Backend.PoolConfig(), TimeScale: sc.TimeScale,
		Routes: []fakebackend.Route{{Name: "page", Path: "/app", Service: workerpool.Constant{D: 30 * time.Millisecond}},
			{Name: "report", Path: "/api/report", Service: workerpool.Constant{D: time.Minute}}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(b)
	defer srv.Close()
	defer b.Close()
	res := run(t, context.Background(), sc, Options{Target: srv.URL, BackendStatsURL: srv.URL + fakebackend.StatsPath})
	if x := group(t, res, "user-x"); x.OK != 8 {
		t.Errorf("user-x without a limit: %d ok of %d, want 8", x.OK, x.Requests)
	}
	if res.Backend.BusyMax < 8 {
		t.Errorf("busy max from the stats URL: %d, want 8", res.Backend.BusyMax)
	}
}

func TestRunRefusesRemoteTarget(t *testing.T) {
	for i, target := range []string{"http://192.0.2.1:8080", "http://10.1.2.3/", "https://127.0.0.1:1", "127.0.0.1:80"} {
		_, err := runResults(context.Background(), story(4), Options{Target: target})
		if err == nil {
			t.Errorf("step %d: Run(target %s): no error", i, target)
		} else if strings.Contains(target, "http://") && !strings.Contains(err.Error(), "allow-remote") {
			t.Errorf("step %d: error %q does not say how to allow it", i, err)
		}
	}
}

func TestRunRefusesPortOutOfRange(t *testing.T) {
	for _, target := range []string{"http://127.0.0.1:99999/", "http://127.0.0.1:0/", "http://[::1]:65536"} {
		_, err := runResults(context.Background(), story(4), Options{Target: target})
		var te *TargetError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), "is not a TCP port") {
			t.Errorf("Run(target %s): error %v, want a TargetError saying the port is not a TCP port", target, err)
		}
	}
}

func TestRunRefusesUnreachableTarget(t *testing.T) {
	target := "http://" + testproc.Refusing(t)
	_, err := runResults(context.Background(), story(4), Options{Target: target})
	var te *TargetError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "nothing accepts connections") {
		t.Errorf("Run(target %s with nothing listening): error %v, want a TargetError saying nothing accepts connections", target, err)
	}
}

func TestRejectStatuses(t *testing.T) {
	got := RejectStatuses(limit.Config{Conn: []limit.ConnSpec{{Status: 429}, {}}, Req: []limit.ReqSpec{{Status: 503}, {Status: 444}}})
	if want := []int{503, 429, 444}; !slices.Equal(got, want) {
		t.Errorf("RejectStatuses: got %v, want %v", got, want)
	}
}

func TestRunLimitStatus502ToldFromUpstream502(t *testing.T) {
	// user-x's 8 tabs against limit_conn 4 answering 502: the 4 over the
	// limit are rejected, and the 4 let through run into the worker
	// timeout, which the proxy also answers 502. Only the limiter's mark
	// tells them apart.
	sc := story(0)
	sc.Proxy.Limits.Conn = []limit.ConnSpec{{Key: "$host", PerKey: 4, Status: 502}}
	sc.Backend.Timeout = 30 * time.Second // the reports take a minute
	res := run(t, context.Background(), sc, Options{})
	x := group(t, res, "user-x")
	if x.Requests != 8 || x.Rejected != 4 || x.BackendErrors != 4 || x.Status["502"] != 8 {
		t.Errorf("user-x: %d requests, %d rejected, %d backend errors, statuses %v; want 8, 4, 4, 8 × 502", x.Requests, x.Rejected, x.BackendErrors, x.Status)
	}
}

// runJudged plays the scenario that make returns live and returns its
// results and the delay the run measured of itself, in model ms (the worst
// of its send lateness at p99, its longest stall, its timers' lateness at
// p99 and its tare's drift): what the machine may have added to a latency,
// which a wall-clock assertion allows beyond its own tolerance. A run that
// judged itself inconclusive is played once more; when that one is
// inconclusive too, the test is skipped with the reasons, so that it never
// passes on such a run and never fails on one.
func runJudged(t *testing.T, make func() *scenarios.Scenario, opts Options) (*report.Results, float64) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		res := run(t, context.Background(), make(), opts)
		v := res.Validity
		if v.Conclusive {
			return res, float64(worstDelay(v)) / float64(time.Millisecond)
		}
		t.Logf("live run %d inconclusive: %s", attempt, strings.Join(v.Reasons, "; "))
		if attempt == 2 {
			t.Skipf("the live engine could not play the scenario faithfully on this machine, twice (time scale %g; it would hold %g): %s",
				res.TimeScale, v.SuggestedTimeScale, strings.Join(v.Reasons, "; "))
		}
	}
}
