package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"stampede/limit"
	"stampede/workerpool"
)

func library(t testing.TB) []string {
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("the scenario library has %d files, want at least 4", len(files))
	}
	return files
}

// TestLibrary loads every scenario of the library and holds it to the
// library's budget: a comment saying what it shows, at most ~20 s of wall
// time and fewer than ~50,000 requests.
func TestLibrary(t *testing.T) {
	for _, f := range library(t) {
		t.Run(f, func(t *testing.T) {
			sc, err := LoadWith(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(f)
			if !bytes.HasPrefix(data, []byte("# ")) {
				t.Errorf("%s does not start with a comment saying what it shows", f)
			}
			if want := strings.TrimSuffix(f, ".yaml"); sc.Name != want {
				t.Errorf("name = %q, want %q, the file's name", sc.Name, want)
			}
			// time_scale: auto chooses the scale on the machine; the
			// live engine's calibration keeps it as fast as it holds.
			wall := time.Duration(float64(sc.Duration) * sc.TimeScale)
			if !sc.TimeScaleAuto && wall > 20*time.Second {
				t.Errorf("duration %v × time_scale %v = %v of wall time, want at most 20s", sc.Duration, sc.TimeScale, wall)
			}
			if n := expectedRequests(sc); n > 50_000 || n < 100 {
				t.Errorf("about %.0f requests, want 100 to 50,000", n)
			}
			if len(sc.SLO) == 0 {
				t.Errorf("no SLO: a library scenario should say what good looks like")
			}
			for _, a := range sc.Sweep {
				for _, set := range axisSets(a) {
					if _, err := sc.With(set); err != nil {
						t.Errorf("sweep point %s: %v", set, err)
					}
				}
			}
		})
	}
}

// expectedRequests estimates a scenario's requests: open loads from their
// rates, closed ones as users that each spend at least think + mean service
// per request.
func expectedRequests(sc *Scenario) float64 {
	total := 0.0
	for _, g := range sc.Tenants {
		l := g.Load
		active := (l.End(sc.Duration) - l.Start).Seconds()
		var n float64
		switch {
		case l.Model == Open && len(l.Stages) > 0:
			left := active
			for _, st := range l.Stages {
				d := min(st.Duration.Seconds(), left)
				n += st.Rate * d
				left -= d
			}
		case l.Model == Open:
			n = l.Rate * active
		default:
			per := l.Think.Seconds()
			w, mean := 0.0, 0.0
			for _, r := range l.Routes {
				w += r.Weight
				mean += r.Weight * sc.Backend.Routes[r.Route].Service.Mean().Seconds()
			}
			per += mean / w
			n = float64(l.Users) * active / per
			if l.Iterations > 0 {
				n = min(n, float64(l.Users*l.Iterations))
			}
		}
		total += n * float64(g.Count)
	}
	return total
}

// TestStockBalance checks that the file reads as it says, and that
// the library's stock-balance.yaml is that file with the timeouts raised so
// that the report can finish.
func TestStockBalance(t *testing.T) {
	sc, err := LoadWith("testdata/issue-stock-balance.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &Scenario{
		Name:        "stock-balance",
		Description: "One site opens 8 tabs of a 2-4 minute report on a shared 8-worker server of 250 sites.",
		Duration:    10 * time.Minute,
		TimeScale:   0.01,
		Seed:        1,
		Backend: Backend{
			Workers: 8, Backlog: 2048, Timeout: 120 * time.Second, OnClientAbort: workerpool.Continue,
			Threads: 1, Boot: workerpool.DefaultBoot,
			Routes: []Route{
				{Name: "page", Path: "/app", Service: workerpool.LogNormal{Median: 30 * time.Millisecond, P99: 200 * time.Millisecond}},
				{Name: "stock-balance", Path: "/api/method/stock_balance", Service: workerpool.Uniform{Min: 2 * time.Minute, Max: 4 * time.Minute}},
			},
		},
		Proxy: Proxy{
			ReadTimeout:    120 * time.Second,
			ConnectTimeout: 60 * time.Second,
			Limits:         limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 4, Zone: "10m", Status: 503}}},
			SendTimeout:    time.Minute, ClientBodyTimeout: time.Minute, ClientHeaderTimeout: time.Minute,
		},
		Tenants: []TenantGroup{
			{Group: "other-sites", Count: 249, Host: "site{i}.example.com", Addr: "127.0.0.1", Load: Load{
				Model: Open, Arrivals: Poisson, Rate: 0.2, Routes: []WeightedRoute{{0, 1}}, ClientTimeout: 2 * time.Minute}},
			{Group: "user-x", Count: 1, Host: "x.example.com", Addr: "127.0.0.1", Load: Load{
				Model: Closed, Users: 8, Start: time.Minute, Iterations: 1, Routes: []WeightedRoute{{1, 1}}, ClientTimeout: 5 * time.Minute}},
		},
		SLO: []SLO{
			{Group: "other-sites", Text: "p99 < 1s", Metric: "p99", Op: "<", Threshold: 1000},
			{Group: "other-sites", Text: "ok_rate > 99%", Metric: "ok_rate", Op: ">", Threshold: 0.99},
		},
	}
	if diff := diffScenarios(sc, want); diff != "" {
		t.Error(diff)
	}
	lib, err := LoadWith("stock-balance.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	want.Backend.Timeout, want.Proxy.ReadTimeout = 300*time.Second, 300*time.Second
	want.TimeScale, want.TimeScaleAuto = 1, true // time_scale: auto
	if diff := diffScenarios(lib, want); diff != "" {
		t.Errorf("library file: %s", diff)
	}
	tenants := sc.Expand()
	if len(tenants) != 250 {
		t.Fatalf("Expand() gave %d tenants, want 250", len(tenants))
	}
	for _, c := range []struct {
		i                 int
		name, group, host string
	}{
		{0, "other-sites-1", "other-sites", "site1.example.com"},
		{248, "other-sites-249", "other-sites", "site249.example.com"},
		{249, "user-x", "user-x", "x.example.com"},
	} {
		tn := tenants[c.i]
		if tn.Index != c.i || tn.Name != c.name || tn.Group != c.group || tn.Host != c.host || tn.Addr != "127.0.0.1" {
			t.Errorf("Expand()[%d] = %+v, want name %s group %s host %s addr 127.0.0.1", c.i, tn, c.name, c.group, c.host)
		}
	}
	if tenants[249].Load != &sc.Tenants[1].Load {
		t.Errorf("Expand()[249].Load does not point into sc.Tenants[1]")
	}
}

// mustParse parses src as the file name, failing t if it does not load.
func mustParse(t testing.TB, name, src string) *Scenario {
	t.Helper()
	sc, err := Parse(name, []byte(src))
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return sc
}

// formatted returns the text Format writes for sc and the scenario that
// text loads as, failing t if either step fails.
func formatted(t testing.TB, sc *Scenario) (string, *Scenario) {
	t.Helper()
	var out bytes.Buffer
	if err := sc.Format(&out); err != nil {
		t.Fatalf("Format: %v", err)
	}
	again, err := Parse("formatted.yaml", out.Bytes())
	if err != nil {
		t.Fatalf("the formatted scenario does not load: %v\n%s", err, out.String())
	}
	return out.String(), again
}

// diffScenarios compares what Format and the engines see, ignoring where a
// scenario came from.
func diffScenarios(got, want *Scenario) string {
	g, w := *got, *want
	g.File, w.File = "", ""
	g.Settings, w.Settings = nil, nil
	g.src, w.src = nil, nil
	g.sets, w.sets = nil, nil
	if reflect.DeepEqual(g, w) {
		return ""
	}
	return fmt.Sprintf("got  %+v\nwant %+v", g, w)
}

func TestExpand(t *testing.T) {
	src := `name: ex
duration: 1m
backend: {routes: [{name: p, path: /, service: 1ms}]}
tenants:
  - {group: solo, host: solo.example.com, load: {rate: 1/s}}
  - {group: pad, count: 3, host: "t{i:03}.example.com", addr: "127.0.2.{i}", load: {rate: 1/s}}
  - {group: nat, count: 2, host: "n{i}.example.com", addr: 127.0.0.9, load: {rate: 1/s}}
  - {group: six, count: 2, host: "six{i}.example.com", addr: "::1", load: {rate: 1/s}}
`
	sc, err := Parse("ex.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tn := range sc.Expand() {
		got = append(got, fmt.Sprintf("%d %s %s %s %s", tn.Index, tn.Name, tn.Group, tn.Host, tn.Addr))
	}
	want := []string{
		"0 solo solo solo.example.com 127.0.0.1",
		"1 pad-1 pad t001.example.com 127.0.2.1",
		"2 pad-2 pad t002.example.com 127.0.2.2",
		"3 pad-3 pad t003.example.com 127.0.2.3",
		"4 nat-1 nat n1.example.com 127.0.0.9",
		"5 nat-2 nat n2.example.com 127.0.0.9",
		"6 six-1 six six1.example.com ::1",
		"7 six-2 six six2.example.com ::1",
	}
	if len(got) != len(want) {
		t.Fatalf("Expand() gave %d tenants, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d: Expand() = %q, want %q", i, got[i], want[i])
		}
	}
	if n := sc.TenantCount(); n != len(want) {
		t.Errorf("TenantCount() = %d, want %d", n, len(want))
	}
}

// TestDefaults checks what a file that says little comes out as.
func TestDefaults(t *testing.T) {
	src := `duration: 2m
backend: {routes: [{name: p, path: /, service: 5ms}]}
proxy: {limit_conn: {per_key: 2}, limit_req: {rate: 5r/s}}
tenants:
  - {group: g, host: h.example.com, load: {rate: 1/s}}
  - {group: c, host: c.example.com, load: {model: closed, users: 3}}
`
	sc, err := Parse("dir/plain.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := &Scenario{
		Name: "plain", Duration: 2 * time.Minute, TimeScale: 1, TimeScaleAuto: true, Seed: 1,
		Backend: Backend{Workers: 1, Backlog: 2048, Threads: 1, Boot: workerpool.DefaultBoot, Routes: []Route{{Name: "p", Path: "/", Service: workerpool.Constant{D: 5 * time.Millisecond}}}},
		Proxy: Proxy{ReadTimeout: 60 * time.Second, ConnectTimeout: 60 * time.Second, Limits: limit.Config{
			Conn: []limit.ConnSpec{{Key: "$host", PerKey: 2, Zone: "10m", Status: 503}},
			Req:  []limit.ReqSpec{{Key: "$host", Rate: "5r/s", Zone: "10m", Status: 503}},
		}, SendTimeout: time.Minute, ClientBodyTimeout: time.Minute, ClientHeaderTimeout: time.Minute},
		Tenants: []TenantGroup{
			{Group: "g", Count: 1, Host: "h.example.com", Addr: "127.0.0.1", Load: Load{Model: Open, Arrivals: Poisson, Rate: 1, Routes: []WeightedRoute{{0, 1}}}},
			{Group: "c", Count: 1, Host: "c.example.com", Addr: "127.0.0.1", Load: Load{Model: Closed, Users: 3, OnTimeout: Retry, Routes: []WeightedRoute{{0, 1}}}},
		},
	}
	if diff := diffScenarios(sc, want); diff != "" {
		t.Error(diff)
	}
	if sc.File != "dir/plain.yaml" || len(sc.Settings) != 0 {
		t.Errorf("File, Settings = %q, %v; want dir/plain.yaml, empty", sc.File, sc.Settings)
	}
}

// TestFeatures reads the test file that uses every feature.
func TestFeatures(t *testing.T) {
	sc, err := LoadWith("testdata/everything.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(sc.Proxy.Limits.Conn); got != 2 {
		t.Errorf("%d limit_conn, want 2 (per_key: off removes the third)", got)
	}
	if r := sc.Proxy.Limits.Req; len(r) != 2 || r[0].Delay != 8 || r[0].NoDelay || !r[1].NoDelay || r[1].Rate != "30r/m" || !r[1].DryRun {
		t.Errorf("limit_req = %+v, want two, the first with delay 8, the second nodelay dry_run at 30r/m", r)
	}
	if got := sc.Backend.Backlog; got != -1 {
		t.Errorf("backlog 0 read as %d, want -1 (none may wait)", got)
	}
	shop := sc.Group("shop")
	if shop == nil {
		t.Fatal(`Group("shop") = nil`)
	}
	// shop's load merges the anchored &browse load and changes its rate.
	if l := shop.Load; l.Rate != 2.0/60 || l.Arrivals != Constant || l.ClientTimeout != 30*time.Second || len(l.Routes) != 2 {
		t.Errorf("shop's merged load = %+v, want rate 2/m, constant arrivals, client_timeout 30s, two routes", l)
	}
	ramp := sc.Group("ramp").Load
	wantStages := []Stage{{time.Minute, 1}, {30 * time.Second, 0}, {90 * time.Second, 1.0 / 3600}}
	if !reflect.DeepEqual(ramp.Stages, wantStages) {
		t.Errorf("stages = %v, want %v", ramp.Stages, wantStages)
	}
	var slo []string
	for _, o := range sc.SLO {
		slo = append(slo, fmt.Sprintf("%s %s %s %g", o.Group, o.Metric, o.Op, o.Threshold))
	}
	wantSLO := []string{
		"shop p99 < 1500", "shop ok_rate >= 0.995",
		"ramp error_rate <= 0.01", "ramp ok_rate >= 0.995",
		"tabs timeout_rate < 0.1", "tabs ok_rate >= 0.995",
	}
	if !reflect.DeepEqual(slo, wantSLO) {
		t.Errorf("SLOs (all expanded, in group order):\n got %q\nwant %q", slo, wantSLO)
	}
	tabs := sc.Group("tabs").Load
	if tabs.OnTimeout != GiveUp || tabs.Think != 5*time.Second || tabs.Iterations != 3 || tabs.Stop != 4*time.Minute {
		t.Errorf("tabs = %+v", tabs)
	}
	if len(sc.Sweep) != 2 || sc.Sweep[1].Path != "backend.routes.report.service" || len(sc.Sweep[0].Values)*len(sc.Sweep[1].Values) != 6 {
		t.Errorf("sweep = %+v, want 2 axes making 6 points", sc.Sweep)
	}
}

func TestFormatRoundTrip(t *testing.T) {
	files := append(library(t), "testdata/everything.yaml")
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			sc, err := LoadWith(f, []string{"seed=7"})
			if err != nil {
				t.Fatal(err)
			}
			out, again := formatted(t, sc)
			if !strings.Contains(out, "# --set seed=7\n") {
				t.Errorf("Format does not list the override:\n%s", out)
			}
			if diff := diffScenarios(again, sc); diff != "" {
				t.Errorf("round trip changed the scenario:\n%s\n%s", diff, out)
			}
			// A second round changes nothing in the text either.
			out2, _ := formatted(t, again)
			first := strings.SplitN(out, "\n", 3)[2] // past the comment lines
			if !strings.HasSuffix(out2, first) {
				t.Errorf("second Format differs:\n%s\n---\n%s", out, out2)
			}
		})
	}
}

func TestFormatRejectsBrokenScenario(t *testing.T) {
	sc := &Scenario{Name: "hand", Backend: Backend{Routes: []Route{{Name: "p", Path: "/"}}}}
	if err := sc.Format(new(bytes.Buffer)); err == nil {
		t.Error("Format of a route without a service time = nil, want an error")
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := LoadWith("testdata/no-such.yaml", nil)
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadWith(missing, nil) = %v, want an *Error wrapping os.ErrNotExist", err)
	}
}

// TestTimeScaleAuto checks time_scale: auto and a number, and that Format
// writes auto back.
func TestTimeScaleAuto(t *testing.T) {
	for _, c := range []struct {
		line  string
		auto  bool
		scale float64
	}{
		{"time_scale: auto\n", true, 1},
		{"", true, 1},
		{"time_scale: 0.02\n", false, 0.02},
	} {
		src := "name: a\nduration: 1m\n" + c.line + "backend: {routes: [{name: p, path: /, service: 5ms}]}\ntenants: [{group: g, host: h, load: {rate: 1/s}}]\n"
		sc, err := Parse("a.yaml", []byte(src))
		if err != nil {
			t.Fatalf("%q: %v", c.line, err)
		}
		if sc.TimeScaleAuto != c.auto || sc.TimeScale != c.scale {
			t.Errorf("%q: TimeScaleAuto, TimeScale = %v, %v; want %v, %v", c.line, sc.TimeScaleAuto, sc.TimeScale, c.auto, c.scale)
		}
		_, back := formatted(t, sc)
		if back.TimeScaleAuto != c.auto || back.TimeScale != c.scale {
			t.Errorf("%q: after Format, TimeScaleAuto, TimeScale = %v, %v; want %v, %v", c.line, back.TimeScaleAuto, back.TimeScale, c.auto, c.scale)
		}
	}
}
