package report

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"stampede/scenarios"
	"stampede/workload"
)

// bigRun draws n results over recScenario's tenants with latencies spread
// over five decades, so that the histograms fill many buckets.
func bigRun(n int, seed uint64) []workload.Result {
	rng := rand.New(rand.NewPCG(seed, 1))
	rs := make([]workload.Result, n)
	for i := range rs {
		o := workload.OK
		status := int16(200)
		switch rng.IntN(20) {
		case 0:
			o, status = workload.Rejected, 503
		case 1:
			o, status = workload.GatewayTimeout, 504
		case 2:
			o, status = workload.ClientTimeout, 0
		}
		ten := rng.IntN(4)
		rs[i] = workload.Result{
			Tenant: int32(ten), Route: int16(ten / 3), Outcome: o, Status: status,
			Intended: time.Duration(rng.Int64N(int64(10 * time.Second))),
			Latency:  time.Duration(float64(time.Millisecond) * rng.ExpFloat64() * float64(1+99*(ten/3))),
		}
		// Worker time, in whole microseconds (as work_s keeps it), from
		// what was drawn: the whole latency for ok answers, half of it
		// for a gateway timeout (the rest was the backlog).
		switch o {
		case workload.OK:
			rs[i].Work = rs[i].Latency.Truncate(time.Microsecond)
		case workload.GatewayTimeout:
			rs[i].Work = (rs[i].Latency / 2).Truncate(time.Microsecond)
		}
	}
	return rs
}

// roundTrip writes r as results.json and reads it back, as stampede report
// does with shards from other machines.
func roundTrip(t *testing.T, r *Results) *Results {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	got, err := DecodeResults(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestMergeResultsEqualsOneRun(t *testing.T) {
	sc := recScenario()
	all := bigRun(20000, 3)
	one := record(sc, all).Results(RunInfo{Engine: "live", Wall: 3 * time.Second})
	a := record(sc, all[:7000])
	b := record(sc, all[7000:])
	a.SampleBackend(time.Second, 5, 0)
	b.SampleBackend(time.Second, 7, 2)
	ra := roundTrip(t, a.Results(RunInfo{Engine: "live", Wall: 3 * time.Second, Model: 10 * time.Second, Backend: statsOf(8, 5, 0, 20*time.Second)}))
	rb := roundTrip(t, b.Results(RunInfo{Engine: "live", Wall: 2 * time.Second, Model: 10 * time.Second, Backend: statsOf(8, 7, 2, 60*time.Second)}))
	m, err := MergeResults(ra, rb)
	if err != nil {
		t.Fatal(err)
	}
	cmp := []struct {
		name      string
		got, want any
	}{
		{"totals", m.Totals, one.Totals},
		{"groups", m.Groups, one.Groups},
		{"tenants", m.Tenants, one.Tenants},
		{"routes", m.Routes, one.Routes},
		{"slo", m.SLO, one.SLO},
		{"series groups", m.Series.Groups, one.Series.Groups},
		{"tenant histograms", m.Histograms.Tenants, one.Histograms.Tenants},
		{"route histograms", m.Histograms.Routes, one.Histograms.Routes},
		{"interval histograms", m.Histograms.Intervals, one.Histograms.Intervals},
	}
	for i, c := range cmp {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("step %d: merged %s = %+v\nwant (one run) %+v", i, c.name, c.got, c.want)
		}
	}
	// The numbers, to be sure the comparison above compared something.
	if m.Groups[0].WorkS <= 0 || m.Tenants[3].WorkS <= m.Tenants[0].WorkS {
		t.Errorf("merged worker time: other-sites %v s, tenant 4 %v s, tenant 1 %v s; want some, and the slow tenant's more", m.Groups[0].WorkS, m.Tenants[3].WorkS, m.Tenants[0].WorkS)
	}
	if g := m.Groups[0]; g.Requests != one.Groups[0].Requests || g.Requests < 14000 || g.Latency.Count == 0 || g.Latency.P99 <= g.Latency.P50 {
		t.Errorf("merged other-sites: %d requests, latency %+v", g.Requests, g.Latency)
	}
	if m.Shards != 2 || m.WallDurationS != 3 || m.Engine != "live" {
		t.Errorf("shards %d wall %v engine %q, want 2, 3 s (the longest), live", m.Shards, m.WallDurationS, m.Engine)
	}
	// Utilization: (20 s + 60 s busy) / (2 × 8 workers × 10 s).
	if b := m.Backend; b.Workers != 8 || b.BusyMax != 7 || b.QueueMax != 2 || b.Utilization != 0.5 {
		t.Errorf("merged backend = %+v, want 8 workers, busy max 7, queue max 2, utilization 0.5", b)
	}
	if got := m.Series.Backend; len(got) != 1 || got[0] != (BackendSample{T: 1, Busy: 7, Queued: 2}) {
		t.Errorf("merged backend series = %+v, want one sample at 1 s: 7 busy, 2 queued", got)
	}
	// Merging is associative: three shards give the same as two.
	c1 := roundTrip(t, record(sc, all[:3000]).Results(RunInfo{Engine: "live"}))
	c2 := roundTrip(t, record(sc, all[3000:7000]).Results(RunInfo{Engine: "live"}))
	m3, err := MergeResults(c1, c2, rb)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m3.Groups, one.Groups) || m3.Shards != 3 {
		t.Errorf("three shards: groups %+v (shards %d), want %+v", m3.Groups, m3.Shards, one.Groups)
	}
	// A merged result merges again.
	m4, err := MergeResults(roundTrip(t, m), roundTrip(t, m))
	if err != nil {
		t.Fatal(err)
	}
	if m4.Totals.Requests != 2*one.Totals.Requests || m4.Shards != 4 {
		t.Errorf("merging a merge: %d requests, %d shards; want %d and 4", m4.Totals.Requests, m4.Shards, 2*one.Totals.Requests)
	}
}

func TestMergeResultsRecomputesSLOs(t *testing.T) {
	sc := recScenario()
	sc.SLO = []scenarios.SLO{{Group: "user-x", Text: "ok_rate >= 50%", Metric: "ok_rate", Op: ">=", Threshold: 0.5}}
	okX := workload.Result{Tenant: 3, Route: 1, Outcome: workload.OK, Status: 200, Latency: time.Second}
	rejX := workload.Result{Tenant: 3, Route: 1, Outcome: workload.Rejected, Status: 503}
	a := record(sc, []workload.Result{okX, okX, okX}).Results(RunInfo{})
	b := record(sc, []workload.Result{rejX, rejX, rejX, rejX, rejX}).Results(RunInfo{})
	if !a.Passed() || b.Passed() {
		t.Fatalf("shards pass %v and %v, want true and false", a.Passed(), b.Passed())
	}
	m, err := MergeResults(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if s := m.SLO[0]; s.Pass || s.Value != 0.375 || s.Name != "user-x: ok_rate >= 50%" {
		t.Errorf("merged SLO = %+v, want fail at 0.375 (3 of 8)", s)
	}
}

func TestMergeResultsErrors(t *testing.T) {
	sc := recScenario()
	base := record(sc, miniRun()).Results(RunInfo{})
	other := recScenario()
	other.Name = "other"
	set := recScenario()
	set.Settings = map[string]string{"proxy.limit_conn.per_key": "off"}
	noHist := record(sc, miniRun()).Results(RunInfo{})
	noHist.Histograms = nil
	badHist := record(sc, miniRun()).Results(RunInfo{})
	badHist.Histograms.Tenants[1] = "not base64!"
	cases := []struct {
		name string
		rs   []*Results
		want string
	}{
		{"nothing", nil, "nothing to merge"},
		{"other scenario", []*Results{base, record(other, nil).Results(RunInfo{})}, `shard 2 is scenario "other", shard 1 is "mini-stock"`},
		{"other settings", []*Results{base, record(set, nil).Results(RunInfo{})}, "shard 2 has settings {proxy.limit_conn.per_key=off}, shard 1 has {proxy.limit_conn.per_key=4}"},
		{"no histograms", []*Results{base, noHist}, "shard 2 (mini-stock) carries no histogram"},
		{"bad histogram", []*Results{base, badHist}, "shard 2, tenant other-sites-2"},
	}
	for i, c := range cases {
		_, err := MergeResults(c.rs...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("step %d: %s: error %v, want one containing %q", i, c.name, err, c.want)
		}
	}
	// Shards differ in their seed by design.
	seeded := recScenario()
	seeded.Settings = map[string]string{"proxy.limit_conn.per_key": "4", "seed": "2"}
	m, err := MergeResults(base, record(seeded, miniRun()).Results(RunInfo{}))
	if err != nil || !reflect.DeepEqual(m.Settings, map[string]string{"proxy.limit_conn.per_key": "4"}) || m.Totals.Requests != 2*base.Totals.Requests {
		t.Errorf("shards differing in seed: settings %v, %v; want merged without the seed", m, err)
	}
	if m, err := MergeResults(base); err != nil || m != base {
		t.Errorf("one result: got %p, %v; want it back unchanged", m, err)
	}
}

// TestMergeValidity: merged shards are conclusive only if every shard is,
// with every shard's reasons and the smallest suggested time scale.
func TestMergeValidity(t *testing.T) {
	sc := recScenario()
	a := record(sc, miniRun()).Results(RunInfo{Engine: "live", Validity: &Validity{Conclusive: true, Reasons: []string{}, SuggestedTimeScale: 0.05, LatenessP99MS: 2}})
	b := record(sc, miniRun()).Results(RunInfo{Engine: "live", Validity: &Validity{Conclusive: false, Reasons: []string{"sends late 40 ms at p99"}, SuggestedTimeScale: 0.02, LatenessP99MS: 40, StallsOverBudget: 2}})
	c := record(sc, miniRun()).Results(RunInfo{Engine: "live", Validity: &Validity{Conclusive: false, Reasons: []string{"a stall of 90 ms"}, SuggestedTimeScale: 0.03, StallsOverBudget: 1}})
	for i, tc := range []struct {
		rs         []*Results
		conclusive bool
		reasons    []string
		scale      float64
	}{
		{[]*Results{a, a}, true, []string{}, 0.05},
		{[]*Results{a, b, c}, false, []string{"shard 2: sends late 40 ms at p99", "shard 3: a stall of 90 ms"}, 0.02},
	} {
		m, err := MergeResults(tc.rs...)
		if err != nil {
			t.Fatal(err)
		}
		v := m.Validity
		if v == nil || v.Conclusive != tc.conclusive || !reflect.DeepEqual(v.Reasons, tc.reasons) || v.SuggestedTimeScale != tc.scale {
			t.Errorf("step %d: merged validity %+v, want conclusive %v, reasons %q, suggested time scale %g", i, v, tc.conclusive, tc.reasons, tc.scale)
		}
	}
	m, _ := MergeResults(a, b, c)
	if v := m.Validity; v.LatenessP99MS != 40 || v.StallsOverBudget != 3 {
		t.Errorf("merged figures: lateness p99 %g ms, %d stalls over budget; want the worst shard's 40 ms and the sum 3", v.LatenessP99MS, v.StallsOverBudget)
	}
}
