package live

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"stampede/clock"
	"stampede/fakebackend"
	"stampede/limit"
	"stampede/limiterproxy"
	"stampede/report"
	"stampede/scenarios"
	"stampede/workerpool"
)

// tareScenario is a few requests of a short route, played 10× faster: about
// 200 ms of wall time after the calibration.
func tareScenario() *scenarios.Scenario {
	return &scenarios.Scenario{
		Name: "tare", Duration: 2 * time.Second, TimeScale: 0.1, Seed: 5,
		Backend: scenarios.Backend{Workers: 2, Routes: []scenarios.Route{route("page", "/app", 100*time.Millisecond)}},
		Tenants: []scenarios.TenantGroup{{Group: "g", Count: 1, Host: "g.example.com", Load: scenarios.Load{
			Model: scenarios.Open, Arrivals: scenarios.Constant, Rate: 2, Routes: one(0), ClientTimeout: 10 * time.Second}}},
	}
}

// checkAllOK checks that every arrival of tareScenario's one group was
// answered.
func checkAllOK(t *testing.T, step string, sc *scenarios.Scenario, res *report.Results) {
	t.Helper()
	g := group(t, res, "g")
	want := arrivals(&sc.Tenants[0].Load, sc.Duration, sc.Seed, 0)
	if want == 0 || g.Requests != want || g.OK != want {
		t.Errorf("%s: %d requests, %d ok; want all %d ok (%+v)", step, g.Requests, g.OK, want, g.Counts)
	}
}

// tareField reports whether results.json would carry the tare.
func tareField(t *testing.T, res *report.Results) bool {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatalf("marshal results: %v", err)
	}
	return strings.Contains(string(b), `"tare_wall_ms"`)
}

func TestRunTareBuiltIn(t *testing.T) {
	sc := tareScenario()
	res := run(t, context.Background(), sc, Options{})
	checkAllOK(t, "built-in pair", sc, res)
	// A request through the in-process proxy and backend over loopback
	// takes a fraction of a millisecond; 50 ms would mean the calibration
	// timed its wait, or something else, as well.
	if res.TareMS <= 0 || res.TareMS >= 50 {
		t.Errorf("built-in pair: tare %v ms, want the path's overhead, above 0 and below 50 ms", res.TareMS)
	}
	if !tareField(t, res) {
		t.Errorf("built-in pair: results.json has no tare_wall_ms")
	}
	t.Logf("tare %.3f ms of wall time", res.TareMS)
}

func TestRunTareExternalTarget(t *testing.T) {
	// With a target the engine does not know the path and measures no
	// tare: latencies are what the client saw.
	sc := tareScenario()
	cases := []struct {
		name  string
		front func(b *fakebackend.Backend) http.Handler
	}{
		{"backend alone", func(b *fakebackend.Backend) http.Handler { return b }},
		{"proxy and backend", nil}, // filled in below: needs the backend's URL
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := fakebackend.New(fakebackend.Options{Pool: sc.Backend.PoolConfig(), TimeScale: sc.TimeScale, Seed: sc.Seed,
				Routes: []fakebackend.Route{{Name: "page", Path: "/app", Service: workerpool.Constant{D: 100 * time.Millisecond}}}})
			if err != nil {
				t.Fatal(err)
			}
			bsrv := httptest.NewServer(b)
			defer bsrv.Close()
			defer b.Close()
			target := bsrv.URL
			if c.front == nil {
				// The built-in pair's shape, started apart from Run.
				policy, err := limit.NewPolicy(sc.Proxy.Limits)
				if err != nil {
					t.Fatal(err)
				}
				up, _ := url.Parse(bsrv.URL)
				rp := limiterproxy.NewProxy(up, limiterproxy.ProxyOptions{UpstreamKeepAlive: 1024, NextUpstreamOff: true})
				psrv := httptest.NewServer(&limiterproxy.Handler{Policy: policy, Next: rp, Clock: clock.Clock{Model: b.Clock()}})
				defer psrv.Close()
				target = psrv.URL
			}
			res := run(t, context.Background(), sc, Options{Target: target, BackendStatsURL: bsrv.URL + fakebackend.StatsPath})
			checkAllOK(t, "step "+c.name, sc, res)
			if res.TareMS != 0 || tareField(t, res) {
				t.Errorf("step %d: target %s: tare %v ms (in results.json: %v), want 0 and absent", i, c.name, res.TareMS, tareField(t, res))
			}
			if s := b.Stats(); s.Arrived != group(t, res, "g").Requests {
				t.Errorf("step %d: the backend saw %d requests, the run sent %d: no calibration request may reach a target's pool",
					i, s.Arrived, group(t, res, "g").Requests)
			}
		})
	}
}

func TestRunCancelledBeforeStart(t *testing.T) {
	// Run's contract: a cancelled ctx ends the run with the results so far,
	// marked Interrupted, and a nil error. A cancellation that comes while
	// the built-in pair is being calibrated (the first quarter second or
	// so of every run, when a user is most likely to press Ctrl-C after a
	// wrong flag) is no different.
	for i, c := range []struct {
		name string
		opts func(t *testing.T) Options
	}{
		{"built-in pair", func(*testing.T) Options { return Options{} }},
		{"target", func(t *testing.T) Options {
			b, err := fakebackend.New(fakebackend.Options{})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(b)
			t.Cleanup(srv.Close)
			t.Cleanup(b.Close)
			return Options{Target: srv.URL}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			res, err := runResults(ctx, tareScenario(), c.opts(t))
			if err != nil {
				t.Fatalf("step %d: Run with a cancelled context: error %v, want nil and interrupted results", i, err)
			}
			if !res.Interrupted {
				t.Errorf("step %d: interrupted false, want true", i)
			}
		})
	}
}

func TestTareEstimate(t *testing.T) {
	us := time.Microsecond
	tests := []struct {
		probes []time.Duration
		want   time.Duration
	}{
		{nil, 0},
		{[]time.Duration{100 * us, 100 * us, 400 * us}, 200 * us},                        // the mean, not the median
		{[]time.Duration{100 * us, 100 * us, 100 * us, 10 * time.Millisecond}, 175 * us}, // a pause counts as 4 medians
		{[]time.Duration{-50 * us, 50 * us, 150 * us}, 200 * us / 3},                     // a probe under its wait counts as 0
		{[]time.Duration{-time.Millisecond}, 0},
	}
	for i, tt := range tests {
		var scratch []time.Duration
		if got := estimate(tt.probes, &scratch); got != tt.want {
			t.Errorf("step %d: estimate(%v) = %v, want %v", i, tt.probes, got, tt.want)
		}
	}
}

func TestTareTracker(t *testing.T) {
	var tt tareTracker
	if got := tt.tare(); got != 0 {
		t.Fatalf("empty: tare %v, want 0", got)
	}
	us := time.Microsecond
	for range calibrationProbes {
		tt.add(100 * us)
	}
	if got := tt.tare(); got != 100*us {
		t.Fatalf("after calibration: tare %v, want 100µs", got)
	}
	if got := tt.runTare(); got != 100*us {
		t.Fatalf("no probe during the run: run tare %v, want the window's 100µs", got)
	}
	// The machine gets slower: probes of 300 µs fill the window and then
	// push the calibration out of it, one at a time.
	var sum time.Duration
	for i := range tareWindow {
		got := tt.observe(300 * us)
		old := max(calibrationProbes-max(i+1-(tareWindow-calibrationProbes), 0), 0)
		n := min(calibrationProbes+i+1, tareWindow)
		limit := 100 * us * tareOutlier
		if 2*old < n { // the median is 300 µs now
			limit = 300 * us * tareOutlier
		}
		want := (time.Duration(old)*100*us + time.Duration(n-old)*min(300*us, limit)) / time.Duration(n)
		if got != want || tt.tare() != want {
			t.Fatalf("step %d: tare %v (window %v), want %v", i, got, tt.tare(), want)
		}
		sum += want
	}
	if got, want := tt.runTare(), sum/tareWindow; got != want {
		t.Errorf("run tare %v, want the mean of the tares taken off, %v", got, want)
	}
}

func TestProbeWait(t *testing.T) {
	story, err := scenarios.LoadWith("../scenarios/stock-balance.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		sc    *scenarios.Scenario
		scale clock.Scale
		lo    time.Duration
		hi    time.Duration
	}{
		// The pages' 42 ms mean, not the reports' minutes: 249 sites
		// send pages, one user 8 reports.
		{"stock-balance at 0.03", story, 0.03, 1200 * time.Microsecond, 1300 * time.Microsecond},
		{"one constant route", tareScenario(), 0.1, 10 * time.Millisecond, 10 * time.Millisecond},
		{"bounded below", tareScenario(), 1e-6, minProbeWait, minProbeWait},
		{"no load", &scenarios.Scenario{Backend: story.Backend}, 0.03, maxProbeWait, maxProbeWait},
	}
	for i, tt := range tests {
		if got := probeWait(tt.sc, tt.scale); got < tt.lo || got > tt.hi {
			t.Errorf("step %d (%s): probeWait = %v, want %v..%v", i, tt.name, got, tt.lo, tt.hi)
		}
	}
}
