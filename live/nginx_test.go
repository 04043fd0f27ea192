package live

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"stampede/fakebackend"
	"stampede/limiterproxy"
	"stampede/report"
	"stampede/scenarios"
)

// The stock-balance story through real nginx (issue 3): nginx configured by
// limiterproxy.WriteNginx, as `stampede nginx-config` prints it, in front of
// the fake backend that `stampede backend` serves, driven with --target,
// gives user-x the same 4/4 split as the built-in proxy.

// debianNginx is where Debian installs nginx; PATH is searched when it is
// not there.
const debianNginx = "/usr/sbin/nginx"

// nginxStockBalanceSets shrink the story to a few seconds of light load: 20
// other sites instead of 249 and 5 minutes instead of 10, which still hold
// user-x's 8 tabs of the 2–4 minute report, from 1m, against limit_conn
// $host 4.
var nginxStockBalanceSets = []string{
	"tenants.other-sites.count=5",
	"duration=5m",
}

// findNginx returns the nginx binary, skipping the test when there is none,
// or failing it when STAMPEDE_REQUIRE_NGINX=1.
func findNginx(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(debianNginx); err == nil {
		return debianNginx
	}
	path, err := exec.LookPath("nginx")
	if err == nil {
		return path
	}
	if os.Getenv("STAMPEDE_REQUIRE_NGINX") == "1" {
		t.Fatalf("nginx is required (STAMPEDE_REQUIRE_NGINX=1) but is neither at %s nor in PATH: %v", debianNginx, err)
	}
	t.Skipf("nginx is neither at %s nor in PATH (apt-get install nginx); set STAMPEDE_REQUIRE_NGINX=1 to make this a failure", debianNginx)
	return ""
}

func TestNginxStockBalance(t *testing.T) {
	nginx := findNginx(t)
	sc, err := scenarios.LoadWith("../scenarios/stock-balance.yaml", nginxStockBalanceSets)
	if err != nil {
		t.Fatal(err)
	}
	if x := sc.Group("user-x"); x == nil || x.Load.Users != 8 || len(sc.Proxy.Limits.Conn) != 1 || sc.Proxy.Limits.Conn[0].PerKey != 4 {
		t.Fatalf("stock-balance.yaml no longer tells the story of 8 tabs against limit_conn 4: user-x %+v, limits %+v", x, sc.Proxy.Limits)
	}

	backend := startScenarioBackend(t, sc)
	proxy := startNginxFor(t, nginx, sc, backend)
	res, err := Run(context.Background(), sc, Options{Target: proxy, BackendStatsURL: backend + fakebackend.StatsPath})
	if err != nil {
		t.Fatalf("live run through nginx: %v", err)
	}
	checkStockBalanceSplit(t, "nginx", res)
	if res.Backend.BusyMax < 4 {
		t.Errorf("nginx: backend busy max %d from the stats URL, want at least user-x's 4 reports", res.Backend.BusyMax)
	}

	builtIn, err := Run(context.Background(), sc, Options{})
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
	routes := make([]fakebackend.Route, len(sc.Backend.Routes))
	for i, r := range sc.Backend.Routes {
		routes[i] = fakebackend.Route{Name: r.Name, Path: r.Path, Service: r.Service}
	}
	b, err := fakebackend.New(fakebackend.Options{Pool: sc.Backend.PoolConfig(), Routes: routes, TimeScale: sc.TimeScale, Seed: sc.Seed})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var errorLog syncBuffer
	done := make(chan error, 1)
	go func() { done <- b.Serve(ctx, ln, &errorLog) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("fake backend: %v", err)
		}
		if t.Failed() && errorLog.Len() > 0 {
			t.Logf("fake backend's log:\n%s", errorLog.String())
		}
	})
	return "http://" + ln.Addr().String()
}

// startNginxFor runs nginx with WriteNginx's configuration of sc's proxy,
// in front of backend, until the test ends, and returns its base URL. nginx
// runs in the foreground as the test's child with its prefix, pid file and
// temporary files in a temporary directory and its log on stderr.
func startNginxFor(t *testing.T, nginx string, sc *scenarios.Scenario, backend string) string {
	t.Helper()
	dir := t.TempDir()
	// nginx takes its port from the configuration: find a free one. Another
	// process may take it before nginx does; nginx then fails to bind and
	// says so below.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	var conf bytes.Buffer
	err = limiterproxy.WriteNginx(&conf, sc.Proxy.Limits, limiterproxy.NginxOptions{
		Listen:      addr,
		Upstream:    backend,
		ReadTimeout: sc.Proxy.ReadTimeout,
		TimeScale:   sc.TimeScale,
	})
	if err != nil {
		t.Fatal(err)
	}
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, conf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	var out syncBuffer
	cmd := exec.Command(nginx, "-p", dir, "-c", confPath, "-e", "stderr", "-g", "daemon off; master_process on;")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", nginx, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		// SIGQUIT would wait for the requests in flight; the run is over.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("nginx configuration:\n%s\nnginx's output:\n%s", conf.String(), out.String())
		}
	})

	// nginx says nothing when it is ready: it is when its port answers.
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	retry := time.NewTicker(20 * time.Millisecond)
	defer retry.Stop()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return "http://" + addr
		}
		select {
		case err := <-exited:
			t.Fatalf("nginx exited before listening on %s: %v\n%s\nconfiguration:\n%s", addr, err, out.String(), conf.String())
		case <-deadline.C:
			t.Fatalf("nginx did not listen on %s within 10 s:\n%s", addr, out.String())
		case <-retry.C:
		}
	}
}

// syncBuffer is a bytes.Buffer that a child's output copier or a server's
// error log may write while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
