package live

import (
	"context"
	"io"
	"net"
	"testing"

	"stampede/fakebackend"
	"stampede/internal/nginxtest"
	"stampede/internal/testproc"
	"stampede/limiterproxy"
	"stampede/report"
	"stampede/scenarios"
)

// The stock-balance story through real nginx (issue 3): nginx configured by
// limiterproxy.WriteNginx, as `stampede nginx-config` prints it, in front of
// the fake backend that `stampede backend` serves, driven with --target,
// gives user-x the same 4/4 split as the built-in proxy.

// nginxStockBalanceSets shrink the story to a few seconds of light load: 20
// other sites instead of 249 and 5 minutes instead of 10, which still hold
// user-x's 8 tabs of the 2–4 minute report, from 1m, against limit_conn
// $host 4.
var nginxStockBalanceSets = []string{
	"time_scale=0.03",
	"tenants.other-sites.count=5",
	"duration=5m",
}

func TestNginxStockBalance(t *testing.T) {
	nginxtest.Require(t)
	sc, err := scenarios.LoadWith("../scenarios/stock-balance.yaml", nginxStockBalanceSets)
	if err != nil {
		t.Fatal(err)
	}
	if x := sc.Group("user-x"); x == nil || x.Load.Users != 8 || len(sc.Proxy.Limits.Conn) != 1 || sc.Proxy.Limits.Conn[0].PerKey != 4 {
		t.Fatalf("stock-balance.yaml no longer tells the story of 8 tabs against limit_conn 4: user-x %+v, limits %+v", x, sc.Proxy.Limits)
	}

	backend := startScenarioBackend(t, sc)
	proxy := startNginxFor(t, sc, backend)
	res, err := runResults(context.Background(), sc, Options{Target: proxy, BackendStatsURL: backend + fakebackend.StatsPath})
	if err != nil {
		t.Fatalf("live run through nginx: %v", err)
	}
	checkStockBalanceSplit(t, "nginx", res)
	if res.Backend.BusyMax < 4 {
		t.Errorf("nginx: backend busy max %d from the stats URL, want at least user-x's 4 reports", res.Backend.BusyMax)
	}

	builtIn, err := runResults(context.Background(), sc, Options{})
	if err != nil {
		t.Fatalf("live run through the built-in proxy: %v", err)
	}
	checkStockBalanceSplit(t, "built-in proxy", builtIn)
	for _, name := range []string{"user-x", "other-sites"} {
		n, b := group(t, res, name), group(t, builtIn, name)
		if n.Requests != b.Requests || n.OK != b.OK || n.Rejected != b.Rejected {
			t.Errorf("%s: nginx %d requests, %d ok, %d rejected; built-in proxy %d, %d, %d; want the same",
				name, n.Requests, n.OK, n.Rejected, b.Requests, b.OK, b.Rejected)
		}
	}
}

// checkStockBalanceSplit holds a run of the story to its outcome: user-x
// gets exactly 4 reports and 4 × 503, and the other sites are all served.
func checkStockBalanceSplit(t *testing.T, via string, res *report.Results) {
	t.Helper()
	x := group(t, res, "user-x")
	if x.Requests != 8 || x.OK != 4 || x.Rejected != 4 || x.Status["503"] != 4 {
		t.Errorf("%s: user-x %d requests, %d ok, %d rejected, statuses %v; want 8, 4 ok, 4 × 503 (%+v)",
			via, x.Requests, x.OK, x.Rejected, x.Status, x.Counts)
	}
	o := group(t, res, "other-sites")
	if o.Requests == 0 || o.Rejected != 0 || o.OK != o.Requests {
		t.Errorf("%s: other-sites %d ok, %d rejected of %d; want all ok and none rejected (%+v)",
			via, o.OK, o.Rejected, o.Requests, o.Counts)
	}
	t.Logf("%s: user-x %d ok, %d rejected, p50 %.0f ms; other-sites %d ok of %d, p50 %.1f ms, p99 %.1f ms",
		via, x.OK, x.Rejected, x.Latency.P50, o.OK, o.Requests, o.Latency.P50, o.Latency.P99)
}

// startScenarioBackend serves sc's fake backend on a loopback port, as
// `stampede backend --scenario` does, until the test ends, and returns its
// base URL.
func startScenarioBackend(t *testing.T, sc *scenarios.Scenario) string {
	t.Helper()
	b, err := fakebackend.New(fakebackend.Options{Pool: sc.Backend.PoolConfig(), Routes: backendRoutes(sc), TimeScale: sc.TimeScale, Seed: sc.Seed})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var errorLog testproc.Output
	done := make(chan error, 1)
	go func() { done <- b.Serve(ctx, ln, &errorLog) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("fake backend: %v", err)
		}
		if t.Failed() && errorLog.String() != "" {
			t.Logf("fake backend's log:\n%s", errorLog.String())
		}
	})
	return "http://" + ln.Addr().String()
}

// startNginxFor runs nginx with WriteNginx's configuration of sc's proxy,
// in front of backend, until the test ends, and returns its base URL.
func startNginxFor(t *testing.T, sc *scenarios.Scenario, backend string) string {
	t.Helper()
	return nginxtest.Start(t, func(w io.Writer, listen string) error {
		return limiterproxy.WriteNginx(w, sc.Proxy.Limits, limiterproxy.NginxOptions{
			Listen:      listen,
			Upstream:    backend,
			ReadTimeout: sc.Proxy.ReadTimeout,
			TimeScale:   sc.TimeScale,
		})
	})
}
