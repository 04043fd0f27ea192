package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"stampede/limit"
	"stampede/report"
	"stampede/scenarios"
	"stampede/workload"
)

// shardScenario is two groups behind a per-host limit; its SLO asks
// user-x for an ok rate of at least 50%.
func shardScenario(name string) *scenarios.Scenario {
	return &scenarios.Scenario{
		Name: name, Duration: 10 * time.Second, TimeScale: 0.01, Seed: 1,
		Backend: scenarios.Backend{Workers: 8, Routes: []scenarios.Route{{Name: "page", Path: "/app"}, {Name: "stock-balance", Path: "/api"}}},
		Proxy:   scenarios.Proxy{Limits: limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 4}}}},
		Tenants: []scenarios.TenantGroup{
			{Group: "other-sites", Count: 2, Host: "site{i}.example.com"},
			{Group: "user-x", Count: 1, Host: "x.example.com"},
		},
		SLO:      []scenarios.SLO{{Group: "user-x", Text: "ok_rate >= 50%", Metric: "ok_rate", Op: ">=", Threshold: 0.5}},
		Settings: map[string]string{"proxy.limit_conn.per_key": "4"},
	}
}

// writeShard records, for sc, n ok answers of 10 ms per ordinary site and
// xOK ok and xRej rejected requests of user-x, and writes results.json.
func writeShard(t *testing.T, sc *scenarios.Scenario, n, xOK, xRej int) string {
	t.Helper()
	rec := report.NewRecorder(sc)
	for i := 0; i < n; i++ {
		for ten := int32(0); ten < 2; ten++ {
			rec.Add(&workload.Result{Tenant: ten, Outcome: workload.OK, Status: 200, Intended: time.Duration(i) * 100 * time.Millisecond, Latency: 10 * time.Millisecond})
		}
	}
	for i := 0; i < xOK; i++ {
		rec.Add(&workload.Result{Tenant: 2, Route: 1, Outcome: workload.OK, Status: 200, Intended: time.Second, Latency: 3 * time.Second})
	}
	for i := 0; i < xRej; i++ {
		rec.Add(&workload.Result{Tenant: 2, Route: 1, Outcome: workload.Rejected, Status: 503, Intended: time.Second})
	}
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, rec.Results(report.RunInfo{Engine: "sim", Wall: time.Second})); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReportCommandMergesShards(t *testing.T) {
	sc := shardScenario("mini")
	a := writeShard(t, sc, 30, 4, 4) // user-x 4/8: passes
	sc2 := shardScenario("mini")
	sc2.Seed = 2                      // another copy of the run, not the same requests again
	b := writeShard(t, sc2, 20, 0, 8) // user-x 0/8: fails alone
	cases := []struct {
		name     string
		inputs   []string
		code     int
		requests uint64
		xOK      uint64
		stdout   string
	}{
		{"one result", []string{a}, exitOK, 68, 4, "all 1 SLOs passed"},
		{"two shards", []string{a, b}, exitSLO, 68 + 48, 4, "1 of 1 SLOs failed"},
	}
	for i, c := range cases {
		dir := filepath.Join(t.TempDir(), "out")
		code, stdout, stderr := runCLI(t, t.Context(), append(append([]string{"report"}, c.inputs...), "-o", dir)...)
		if code != c.code {
			t.Errorf("step %d: %s: exit %d, want %d; stderr: %s", i, c.name, code, c.code, stderr)
		}
		if !strings.Contains(stdout, c.stdout) || !strings.Contains(stdout, "wrote "+filepath.Join(dir, "report.html")) {
			t.Errorf("step %d: %s: stdout lacks %q or the report's path:\n%s", i, c.name, c.stdout, stdout)
		}
		res, err := report.ReadResults(filepath.Join(dir, "results.json"))
		if err != nil {
			t.Fatalf("step %d: %s: %v", i, c.name, err)
		}
		if x := res.Group("user-x"); res.Totals.Requests != c.requests || x == nil || x.OK != c.xOK {
			t.Errorf("step %d: %s: %d requests, user-x %+v; want %d requests and %d ok for user-x", i, c.name, res.Totals.Requests, x, c.requests, c.xOK)
		}
		for _, f := range []string{"histograms.hlog", "report.html"} {
			if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
				t.Errorf("step %d: %s: %s not written (%v)", i, c.name, f, err)
			}
		}
	}
}

func TestReportCommandBadInput(t *testing.T) {
	dir := t.TempDir()
	good := writeShard(t, shardScenario("mini"), 3, 1, 1)
	other := writeShard(t, shardScenario("other"), 3, 1, 1)
	notResults := filepath.Join(dir, "comparison.json")
	os.WriteFile(notResults, []byte(`{"schema": "stampede.comparison/v1"}`), 0o644)
	garbage := filepath.Join(dir, "garbage.json")
	os.WriteFile(garbage, []byte(`not json`), 0o644)
	nullGroups := filepath.Join(dir, "null-groups.json")
	if b, err := os.ReadFile(good); err == nil {
		os.WriteFile(nullGroups, []byte(strings.Replace(string(b), `"groups": [`, `"groups": null, "x": [`, 1)), 0o644)
	}
	negative := filepath.Join(dir, "negative.json")
	os.WriteFile(negative, []byte(`{"schema": "stampede.results/v1", "scenario": "s", "totals": {"requests": -3}}`), 0o644)
	out := filepath.Join(dir, "out")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no input", []string{"-o", out}, "requires at least 1 arg"},
		{"no -o", []string{good}, "-o DIR is required"},
		{"missing file", []string{filepath.Join(dir, "nope.json"), "-o", out}, "nope.json"},
		{"not results", []string{notResults, "-o", out}, `schema is "stampede.comparison/v1"`},
		{"not json", []string{garbage, "-o", out}, "garbage.json"},
		{"null groups", []string{nullGroups, "-o", out}, `null-groups.json: invalid results: "groups" is null`},
		{"negative count", []string{negative, "-o", out}, "totals.requests"},
		{"different scenarios", []string{good, other, "-o", out}, `is scenario "other", `},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runRefused(t, c.want, append([]string{"report"}, c.args...)...) })
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("bad input still wrote %s (%v)", out, err)
	}
}
