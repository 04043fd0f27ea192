package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"stampede/scenarios"
)

// sweepPoint makes a point of the stock-balance sweep: other-sites' p99 and
// ok count out of 1000, and user-x's ok and rejected out of 8, with the
// file's two SLOs on other-sites.
func sweepPoint(value string, sitesP99 float64, sitesOK uint64, xOK, xRej uint64, xP99 float64) Point {
	sites := GroupResult{Name: "other-sites", Tenants: 249, Counts: Counts{Requests: 1000, OK: sitesOK, ClientTimeouts: 1000 - sitesOK}, Latency: Latency{Count: sitesOK, P99: sitesP99}}
	x := GroupResult{Name: "user-x", Tenants: 1, Counts: Counts{Requests: 8, OK: xOK, Rejected: xRej, BackendErrors: 8 - xOK - xRej}, Latency: Latency{Count: xOK, P99: xP99}}
	groups := []GroupResult{sites, x}
	slo := EvaluateSLOs(stockSLOs, groups)
	return NewPoint(Names{value}, filepath.Join("per_key="+value, "results.json"), &Results{Groups: groups, SLO: slo})
}

// storySweep is the story's sweep of per_key: off, 2, 4, 6 and 8. 2 and 4
// pass; 6 misses other-sites' p99 by 40%; off and 8 fail it by far.
func storySweep() []Point {
	return []Point{
		sweepPoint("off", 15000, 900, 0, 0, 0),
		sweepPoint("2", 150, 1000, 2, 6, 180000),
		sweepPoint("4", 212, 1000, 4, 4, 181000),
		sweepPoint("6", 1400, 995, 6, 2, 182000),
		sweepPoint("8", 9000, 950, 8, 0, 183000),
	}
}

var stockSLOs = stockSLOList()

func stockSLOList() []scenarios.SLO {
	return []scenarios.SLO{
		{Group: "other-sites", Text: "p99 < 1s", Metric: "p99", Op: "<", Threshold: 1000},
		{Group: "other-sites", Text: "ok_rate > 99%", Metric: "ok_rate", Op: ">", Threshold: 0.99},
	}
}

var axis = Names{"proxy.limit_conn.per_key"}

func TestRecommend(t *testing.T) {
	sweep := storySweep()
	tie := []Point{sweepPoint("2", 150, 1000, 4, 4, 190000), sweep[2]}
	failing := []Point{
		sweepPoint("off", 15000, 900, 8, 0, 0),
		sweepPoint("8", 1200, 995, 8, 0, 0),
		sweepPoint("16", 3000, 1000, 8, 0, 0),
	}
	different := []Point{sweepPoint("1", 500, 900, 8, 0, 0), sweepPoint("2", 1500, 1000, 8, 0, 0)}
	grid := []Point{sweepPoint("4", 212, 1000, 4, 4, 1), sweepPoint("4", 300, 1000, 6, 2, 1)}
	grid[0].Value, grid[1].Value = Names{"4", "8"}, Names{"6", "16"}
	const margin = "protect every group with an SLO; prefer the widest margin to a failing point"
	cases := []struct {
		name   string
		axis   Names
		points []Point
		obj    scenarios.Recommend
		want   Recommendation
	}{
		// 2 and 4 pass, 6 fails: 2 is two steps from it, 4 only one.
		{"the story's sweep", axis, sweep, scenarios.Recommend{}, Recommendation{Value: Names{"2"}, Passed: true, Objective: margin,
			Reason: "per_key=2 passes every SLO (other-sites ok_rate 100% > 99%, other-sites p99 150 ms < 1 s); margin: the nearest failing point, per_key=6, is 2 steps away (other-sites p99 1.4 s vs < 1 s, 40% over)"}},
		{"strictest", axis, sweep, scenarios.Recommend{Prefer: scenarios.PreferStrictest}, Recommendation{Value: Names{"2"}, Passed: true, Objective: "protect every group with an SLO; prefer the strictest setting",
			Reason: "per_key=2 passes every SLO (other-sites ok_rate 100% > 99%, other-sites p99 150 ms < 1 s); the strictest of 2 such points"}},
		{"loosest of one group", axis, sweep, scenarios.Recommend{Protect: "other-sites", Prefer: scenarios.PreferLoosest}, Recommendation{Value: Names{"4"}, Passed: true, Objective: "protect other-sites; prefer the loosest setting",
			Reason: "per_key=4 passes every SLO of other-sites (other-sites ok_rate 100% > 99%, other-sites p99 212 ms < 1 s); the loosest of 2 such points"}},
		{"all pass: the most headroom", axis, tie, scenarios.Recommend{}, Recommendation{Value: Names{"2"}, Passed: true, Objective: margin,
			Reason: "per_key=2 passes every SLO (other-sites ok_rate 100% > 99%, other-sites p99 150 ms < 1 s); every point does, and it has the most headroom"}},
		{"none passes, one SLO everywhere", axis, failing, scenarios.Recommend{}, Recommendation{Value: Names{"8"}, Passed: false, Objective: margin,
			Reason: "no point passes every SLO: other-sites: p99 < 1s fails at every point; per_key=8 comes closest (1 of 2 SLOs failed: other-sites p99 1.2 s vs < 1 s, 20% over)"}},
		{"none passes, different SLOs", axis, different, scenarios.Recommend{}, Recommendation{Value: Names{"1"}, Passed: false, Objective: margin,
			Reason: "no point passes every SLO: each fails a different one; per_key=1 comes closest (1 of 2 SLOs failed: other-sites ok_rate 90% vs > 99%, 9.091% under)"}},
		{"two axes", Names{"proxy.limit_conn.per_key", "backend.workers"}, grid, scenarios.Recommend{}, Recommendation{Value: Names{"4", "8"}, Passed: true, Objective: margin,
			Reason: "per_key=4, workers=8 passes every SLO (other-sites ok_rate 100% > 99%, other-sites p99 212 ms < 1 s); every point does, and it has the most headroom"}},
		{"no points", axis, nil, scenarios.Recommend{}, Recommendation{Reason: "there are no points to compare", Objective: margin}},
	}
	for i, c := range cases {
		if got := RecommendFor(c.axis, c.points, c.obj); !reflect.DeepEqual(got, c.want) {
			t.Errorf("step %d: %s:\ngot  %+v\nwant %+v", i, c.name, got, c.want)
		}
	}
}

func TestNamesJSON(t *testing.T) {
	cases := []struct {
		n    Names
		json string
	}{
		{Names{"proxy.limit_conn.per_key"}, `"proxy.limit_conn.per_key"`},
		{Names{"a", "b"}, `["a","b"]`},
		{Names{}, `[]`},
		{nil, `[]`},
	}
	for i, c := range cases {
		b, err := json.Marshal(c.n)
		if err != nil || string(b) != c.json {
			t.Errorf("step %d: Marshal(%v) = %s, %v; want %s", i, c.n, b, err, c.json)
		}
		var back Names
		if err := json.Unmarshal(b, &back); err != nil || len(back) != len(c.n) {
			t.Errorf("step %d: Unmarshal(%s) = %v, %v", i, b, back, err)
		}
	}
	var n Names
	if err := json.Unmarshal([]byte(`3`), &n); err == nil {
		t.Errorf("Unmarshal(3) gave no error")
	}
}

func TestComparisonFile(t *testing.T) {
	sweep := storySweep()
	points := []Point{sweep[0], sweep[2]}
	c := NewComparisonFor("stock-balance", axis, points, scenarios.Recommend{})
	var buf bytes.Buffer
	if err := WriteComparison(&buf, c); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if got, want := keysOf(doc), sorted("schema", "scenario", "axis", "points", "recommendation"); !reflect.DeepEqual(got, want) {
		t.Errorf("comparison.json fields %v, want %v", got, want)
	}
	if doc["schema"] != "stampede.comparison/v1" || doc["axis"] != "proxy.limit_conn.per_key" {
		t.Errorf("schema %v axis %v, want stampede.comparison/v1 and a plain string", doc["schema"], doc["axis"])
	}
	p0 := doc["points"].([]any)[0].(map[string]any)
	if got, want := keysOf(p0), sorted("value", "results", "groups", "slo", "passed"); !reflect.DeepEqual(got, want) {
		t.Errorf("point fields %v, want %v", got, want)
	}
	if p0["value"] != "off" || p0["results"] != "per_key=off/results.json" {
		t.Errorf("point 0: value %v results %v", p0["value"], p0["results"])
	}
	if got, want := keysOf(doc["recommendation"].(map[string]any)), sorted("value", "reason", "passed", "objective"); !reflect.DeepEqual(got, want) {
		t.Errorf("recommendation fields %v, want %v", got, want)
	}

	back := fileRoundTrip(t, buf.Bytes(), ReadComparison, WriteComparison)
	if !strings.Contains(back.Recommendation.Reason, "per_key=4 passes every SLO") || !strings.Contains(back.Recommendation.Reason, "margin: the nearest failing point") || !back.Recommendation.Passed {
		t.Errorf("recommendation read back: %+v", back.Recommendation)
	}
	bad := filepath.Join(t.TempDir(), "r.json")
	os.WriteFile(bad, []byte(`{"schema": "stampede.results/v1"}`), 0o644)
	if _, err := ReadComparison(bad); err == nil || !strings.Contains(err.Error(), `schema is "stampede.results/v1"`) {
		t.Errorf("reading results.json as a comparison: error %v", err)
	}
}
