package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"stampede/report"
	"stampede/scenarios"
)

// miniScenario is a small scenario that simulates in milliseconds: one noisy
// tenant with four long requests and a limit of two, and quiet tenants.
const miniScenario = `name: mini
duration: 1m
time_scale: 0.01
seed: 7
backend:
  workers: 4
  timeout: 120s
  routes:
    - {name: page, path: /app, service: "lognormal:median=30ms,p99=200ms"}
    - {name: report, path: /report, service: "uniform:30s..60s"}
proxy:
  read_timeout: 120s
  limit_conn: {key: $host, per_key: 2}
tenants:
  - group: quiet
    count: 5
    host: site{i}.example.com
    load: {model: open, arrivals: poisson, rate: 1/s, routes: {page: 1}, client_timeout: 30s}
  - group: noisy
    host: x.example.com
    load: {model: closed, users: 4, start: 5s, iterations: 1, routes: {report: 1}, client_timeout: 5m}
slo:
  quiet: ["p99 < 1s", "ok_rate > 99%"]
`

func group(t *testing.T, r *report.Results, name string) report.GroupResult {
	t.Helper()
	for _, g := range r.Groups {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("no group %q in results", name)
	return report.GroupResult{}
}

func TestRunSim(t *testing.T) {
	sc := writeScenario(t, miniScenario)
	out := t.TempDir()
	stdout, _ := runExit(t, t.Context(), exitOK, "run", sc, "--engine", "sim", "-o", out, "--no-progress")
	for _, f := range []string{"results.json", "histograms.hlog", "report.html"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: missing or empty (%v)", f, err)
		}
	}
	r := readJSON[report.Results](t, filepath.Join(out, "results.json"))
	if r.Schema != report.Schema || r.Engine != "sim" || r.Interrupted {
		t.Errorf("schema %q engine %q interrupted %v, want %q sim false", r.Schema, r.Engine, r.Interrupted, report.Schema)
	}
	noisy := group(t, r, "noisy")
	if noisy.OK != 2 || noisy.Rejected != 2 {
		t.Errorf("noisy: ok %d rejected %d, want 2 and 2 (limit_conn 2 of 4 users)", noisy.OK, noisy.Rejected)
	}
	if q := group(t, r, "quiet"); q.Rejected != 0 || q.Requests < 200 {
		t.Errorf("quiet: %d requests, %d rejected; want about 300 and none rejected", q.Requests, q.Rejected)
	}
	if !strings.Contains(stdout, "noisy") || !strings.Contains(stdout, "report.html") {
		t.Errorf("stdout lacks the summary:\n%s", stdout)
	}
}

func TestRunSLOFailureExits3(t *testing.T) {
	sc := writeScenario(t, miniScenario)
	out := t.TempDir()
	// Without the limit the noisy tenant's four reports hold all four
	// workers and the quiet tenants wait.
	_, stderr := runExit(t, t.Context(), exitSLO, "run", sc, "--engine", "sim", "-o", out, "--no-progress",
		"--set", "proxy.limit_conn.per_key=off")
	r := readJSON[report.Results](t, filepath.Join(out, "results.json"))
	if r.Settings["proxy.limit_conn.per_key"] != "off" {
		t.Errorf("settings = %v, want the override recorded", r.Settings)
	}
	if !strings.Contains(stderr, "SLO") {
		t.Errorf("stderr does not name the failed SLO: %s", stderr)
	}
}

func TestRunInterruptedExits130(t *testing.T) {
	sc := writeScenario(t, miniScenario)
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	runExit(t, ctx, exitInterrupted, "run", sc, "--engine", "sim", "-o", out, "--no-progress")
	r := readJSON[report.Results](t, filepath.Join(out, "results.json"))
	if !r.Interrupted {
		t.Errorf("results.json: interrupted = false, want true")
	}
	if r.ModelDurationS >= 60 {
		t.Errorf("results.json: model_duration_s = %v, want how far the run got, not the scenario's 60 s", r.ModelDurationS)
	}
}

func TestRunBadUsage(t *testing.T) {
	good := writeScenario(t, miniScenario)
	bad := writeScenario(t, strings.Replace(miniScenario, "rate: 1/s", "rate: fast", 1))
	for _, tc := range []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no scenario", []string{"run"}, "accepts 1 arg"},
		{"missing file", []string{"run", filepath.Join(t.TempDir(), "nope.yaml")}, "nope.yaml"},
		{"bad file", []string{"run", bad}, ":"},
		{"bad engine", []string{"run", good, "--engine", "warp"}, "--engine"},
		{"bad set", []string{"run", good, "--set", "backend.workers=many"}, "backend.workers"},
		{"unknown set path", []string{"run", good, "--set", "backend.wrokers=2"}, "wrokers"},
		{"sim with target", []string{"run", good, "--engine", "sim", "--target", "http://127.0.0.1:1"}, "--target"},
		{"target not http", []string{"run", good, "--target", "ftp://127.0.0.1:1"}, "http://"},
		{"target without scheme", []string{"run", good, "--target", "127.0.0.1:8080"}, "http://"},
		{"remote target", []string{"run", good, "--target", "http://192.0.2.1:80"}, "--allow-remote"},
		{"unknown flag", []string{"run", good, "--bogus"}, "bogus"},
		{"compare without sweep", []string{"compare", good, "--engine", "sim"}, "sweep"},
		{"compare bad sweep", []string{"compare", good, "--sweep", "proxy.limit_conn.per_key"}, "--sweep"},
		{"compare bad value", []string{"compare", good, "--sweep", "proxy.limit_conn.per_key=2,zero"}, "zero"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runRefused(t, tc.want, append(tc.args, "-o", t.TempDir())...)
		})
	}
}

func TestCompareSim(t *testing.T) {
	sc := writeScenario(t, miniScenario)
	out := t.TempDir()
	runExit(t, t.Context(), exitOK, "compare", sc, "--engine", "sim", "-o", out, "--no-progress",
		"--sweep", "proxy.limit_conn.per_key=off,1,2,4")
	c := readJSON[report.Comparison](t, filepath.Join(out, "comparison.json"))
	if c.Schema != report.ComparisonSchema || len(c.Points) != 4 {
		t.Fatalf("schema %q with %d points, want %q with 4", c.Schema, len(c.Points), report.ComparisonSchema)
	}
	for _, p := range c.Points {
		if _, err := os.Stat(filepath.Join(out, filepath.FromSlash(p.Results))); err != nil {
			t.Errorf("point %v: results %s: %v", p.Value, p.Results, err)
		}
	}
	if c.Points[0].Passed {
		t.Errorf("per_key=off passed its SLOs; want the quiet tenants to suffer without a limit")
	}
	rec := c.Recommendation
	if !rec.Passed || len(rec.Value) != 1 || rec.Value[0] == "off" {
		t.Errorf("recommendation %+v: want a passing limit", rec)
	}
	if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
		t.Errorf("comparison report: %v", err)
	}
}

func TestGrid(t *testing.T) {
	pts := grid([]scenarios.Axis{{Path: "proxy.limit_conn.per_key", Values: []string{"2", "4"}}, {Path: "backend.workers", Values: []string{"8", "16"}}})
	var got []string
	for _, p := range pts {
		got = append(got, p.label+"|"+p.dir+"|"+strings.Join(p.sets, " "))
	}
	want := []string{
		"per_key=2, workers=8|per_key=2_workers=8|proxy.limit_conn.per_key=2 backend.workers=8",
		"per_key=2, workers=16|per_key=2_workers=16|proxy.limit_conn.per_key=2 backend.workers=16",
		"per_key=4, workers=8|per_key=4_workers=8|proxy.limit_conn.per_key=4 backend.workers=8",
		"per_key=4, workers=16|per_key=4_workers=16|proxy.limit_conn.per_key=4 backend.workers=16",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("grid:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRunSimDeterministic: the same file and seed give byte-identical
// results.json apart from the wall time.
func TestRunSimDeterministic(t *testing.T) {
	sc := writeScenario(t, miniScenario)
	var outs [2][]byte
	for i := range outs {
		out := t.TempDir()
		runExit(t, t.Context(), exitOK, "run", sc, "--engine", "sim", "-o", out, "--no-progress")
		b := readFile(t, filepath.Join(out, "results.json"))
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if _, ok := m["wall_duration_s"]; !ok {
			t.Fatalf("run %d: results.json has no wall_duration_s", i)
		}
		outs[i] = wallRE.ReplaceAll(b, []byte(`"$1": 0`))
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Errorf("two runs of the same scenario and seed differ beyond the wall time")
	}
}

var wallRE = regexp.MustCompile(`"(wall_duration_s|start_unix_ms)": [0-9.e+-]+`)

func TestRunHelpAndFlagSuggestions(t *testing.T) {
	stdout := runWant(t, []string{"run", "--help"}, "Exit status:", "130", "inconclusive", "Examples:", "--target URL", "--backend-stats URL")
	if strings.Contains(stdout, "--target stampede") {
		t.Errorf("run --help names --target's value after a backquoted phrase:\n%s", stdout)
	}
	runRefused(t, "did you mean --engine?", "run", "--engin", "sim", "x.yaml")
	runWant(t, []string{"__complete", "compare", "../../scenarios/stock-balance.yaml", "--sweep", "proxy.limit_conn.p"}, "proxy.limit_conn.per_key=")
}
