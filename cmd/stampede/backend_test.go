package main

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"stampede/fakebackend"
	"stampede/workerpool"
)

func TestBackendOptions(t *testing.T) {
	parse := func(t *testing.T, args ...string) fakebackend.Options {
		t.Helper()
		cmd := newBackendCmd()
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatalf("ParseFlags(%q): %v", args, err)
		}
		var f backendFlags
		// Read the flags back through the command, as RunE would.
		fl := cmd.Flags()
		f.listen, _ = fl.GetString("listen")
		f.scenario, _ = fl.GetString("scenario")
		f.workers, _ = fl.GetInt("workers")
		f.backlog, _ = fl.GetInt("backlog")
		f.timeout, _ = fl.GetDuration("timeout")
		f.onClientAbort, _ = fl.GetString("on-client-abort")
		f.routes, _ = fl.GetStringArray("route")
		f.timeScale, _ = fl.GetFloat64("time-scale")
		f.seed, _ = fl.GetUint64("seed")
		f.threads, _ = fl.GetInt("threads")
		f.boot, _ = fl.GetDuration("boot")
		f.maxRequests, _ = fl.GetInt("max-requests")
		f.maxRequestsJitter, _ = fl.GetInt("max-requests-jitter")
		f.backlogOverflow, _ = fl.GetString("backlog-overflow")
		opts, err := backendOptions(&f, fl.Changed)
		if err != nil {
			t.Fatalf("backendOptions(%q): %v", args, err)
		}
		return opts
	}
	routes := func(o fakebackend.Options) string {
		var s []string
		for _, r := range o.Routes {
			s = append(s, r.Name+" "+r.Path+"="+r.Service.String())
		}
		return strings.Join(s, "; ")
	}

	cases := []struct {
		args   []string
		pool   workerpool.Config
		scale  float64
		seed   uint64
		routes string
	}{
		{nil, workerpool.Config{Workers: 8, Backlog: 2048, Timeout: 120 * time.Second, Threads: 1, Boot: workerpool.DefaultBoot, Seed: 1}, 1, 1, ""},
		{[]string{"--workers", "16", "--backlog", "0", "--timeout", "0", "--on-client-abort", "cancel", "--time-scale", "0.01", "--seed", "9",
			"--route", "/slow=uniform:2m..4m", "--route", "/=lognormal:median=30ms,p99=200ms",
			"--threads", "4", "--boot", "1s", "--max-requests", "5000", "--max-requests-jitter", "500", "--backlog-overflow", "reset"},
			workerpool.Config{Workers: 16, Backlog: -1, OnClientAbort: workerpool.Cancel, Threads: 4, Boot: time.Second,
				MaxRequests: 5000, MaxRequestsJitter: 500, Overflow: workerpool.Reset, Seed: 9}, 0.01, 9,
			"/slow /slow=uniform:2m..4m; / /=lognormal:median=30ms,p99=200ms"},
		// The scenario's backend, time scale and seed.
		{[]string{"--scenario", "../../scenarios/stock-balance.yaml"},
			workerpool.Config{Workers: 8, Backlog: 2048, Timeout: 300 * time.Second, Threads: 1, Boot: workerpool.DefaultBoot, Seed: 1}, 1, 1, // time_scale: auto is real time without a calibration
			"page /app=lognormal:median=30ms,p99=200ms; stock-balance /api/method/stock_balance=uniform:2m..4m"},
		// Flags given explicitly override it; --route replaces its routes.
		{[]string{"--scenario", "../../scenarios/stock-balance.yaml", "--workers", "4", "--timeout", "30s", "--time-scale", "1", "--route", "/=1s"},
			workerpool.Config{Workers: 4, Backlog: 2048, Timeout: 30 * time.Second, Threads: 1, Boot: workerpool.DefaultBoot, Seed: 1}, 1, 1, "/ /=1s"},
	}
	for i, c := range cases {
		o := parse(t, c.args...)
		if o.Pool != c.pool || o.TimeScale != c.scale || o.Seed != c.seed || routes(o) != c.routes {
			t.Errorf("step %d: %q: got pool %+v scale %v seed %d routes %q,\nwant pool %+v scale %v seed %d routes %q",
				i, c.args, o.Pool, o.TimeScale, o.Seed, routes(o), c.pool, c.scale, c.seed, c.routes)
		}
	}
}

// firstLineRE matches the first line of a command's stderr.
var firstLineRE = regexp.MustCompile(`\A(.*)\n`)

// TestBackendServes runs `stampede backend` in-process and holds it to its
// flags: the line that says where it listens, service times, the timeout,
// the stats; startCLI checks that it exits 0 once its context is done.
func TestBackendServes(t *testing.T) {
	line := startCLI(t, firstLineRE, "backend", "--listen", "127.0.0.1:0", "--workers", "3", "--backlog", "5", "--timeout", "2m",
		"--route", "/slow=10m", "--route", "/=2s", "--time-scale", "0.001")[1]
	m := regexp.MustCompile(`^backend listening on (127\.0\.0\.1:\d+) \(3 workers, backlog 5, timeout 2m0s\)$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("first line %q, want backend listening on 127.0.0.1:PORT (3 workers, backlog 5, timeout 2m0s)", line)
	}
	url := "http://" + m[1]

	resp, err := http.Get(url + "/page")
	if err != nil {
		t.Fatalf("step 1: GET /page: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get(fakebackend.HeaderService) != "2s" || string(body) != "/: served in 2s\n" {
		t.Errorf("step 1: GET /page: %d %q %q, want 200, 2s of service and a body", resp.StatusCode, resp.Header.Get(fakebackend.HeaderService), body)
	}
	// 10m of work with a 2m timeout, 1000× faster: killed after 120ms.
	if _, err := http.Get(url + "/slow"); err == nil {
		t.Errorf("step 2: GET /slow got a response, want the connection dropped by the timeout")
	}
	resp, err = http.Get(url + fakebackend.StatsPath)
	if err != nil {
		t.Fatalf("step 3: GET stats: %v", err)
	}
	var s workerpool.Stats
	err = json.NewDecoder(resp.Body).Decode(&s)
	resp.Body.Close()
	if err != nil || s.Workers != 3 || s.Backlog != 5 || s.Served != 1 || s.Killed != 1 {
		t.Errorf("step 3: stats %+v (%v), want 3 workers, backlog 5, 1 served, 1 killed", s, err)
	}
}

func FuzzParseRoute(f *testing.F) {
	for _, s := range []string{"/slow=uniform:2m..4m", "/=lognormal:median=30ms,p99=200ms", "/x=fast", "x=1s", "/a", "=", "/a=b=c", " /p = exp:1s "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseRoute(s)
		if err != nil {
			return
		}
		if !strings.HasPrefix(r.Path, "/") || r.Name != r.Path || r.Service == nil {
			t.Fatalf("parseRoute(%q) = %+v: want a path from /, named for it, with a service time", s, r)
		}
		again, err := parseRoute(r.Path + "=" + r.Service.String())
		if err != nil || again.Path != r.Path || again.Service != r.Service {
			t.Fatalf("parseRoute(%q) = %+v, which does not read back: %+v, %v", s, r, again, err)
		}
	})
}
