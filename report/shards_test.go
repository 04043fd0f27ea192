package report

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckShards(t *testing.T) {
	shard := func(run string, i, n int) *Results {
		return &Results{Scenario: "s", Engine: "live", Seed: 1, RunID: run, Shard: &ShardInfo{i, n}}
	}
	cp := func(engine string, seed uint64) *Results {
		return &Results{Scenario: "s", Engine: engine, Seed: seed}
	}
	tests := []struct {
		name  string
		rs    []*Results
		force bool
		want  string // "" for no error
	}{
		{name: "one result", rs: []*Results{cp("sim", 1)}},
		{name: "every shard once", rs: []*Results{shard("r", 2, 3), shard("r", 0, 3), shard("r", 1, 3)}},
		{name: "a shard of one", rs: []*Results{shard("r", 0, 1)}},
		{name: "one shard of three", rs: []*Results{shard("r", 1, 3)}, want: "lacks shard 0/3, 2/3"},
		{name: "a missing shard", rs: []*Results{shard("r", 0, 3), shard("r", 2, 3)}, want: "lacks shard 1/3 of 3"},
		{name: "a missing shard, forced", rs: []*Results{shard("r", 0, 3), shard("r", 2, 3)}, force: true},
		{name: "a shard twice, forced", rs: []*Results{shard("r", 0, 2), shard("r", 0, 2)}, force: true, want: "given twice"},
		{name: "shards of two runs, forced", rs: []*Results{shard("r", 0, 2), shard("q", 1, 2)}, force: true, want: "of run"},
		{name: "a shard twice", rs: []*Results{shard("r", 0, 2), shard("r", 1, 2), shard("r", 1, 2)}, want: "shard 1/2 of run r is given twice: f1 and f2"},
		{name: "shards of two runs", rs: []*Results{shard("r", 0, 2), shard("q", 1, 2)}, want: `f1 is of run "q", f0 of run "r"`},
		{name: "other counts", rs: []*Results{shard("r", 0, 2), shard("r", 1, 3)}, want: "f1 is shard 1/3, f0 is shard 0/2"},
		{name: "a shard and a copy", rs: []*Results{shard("r", 0, 2), cp("live", 2)}, want: "f0 is shard 0/2 of run r but f1 is no shard"},
		{name: "copies with their own seeds", rs: []*Results{cp("sim", 1), cp("sim", 2)}},
		{name: "copies with one seed", rs: []*Results{cp("sim", 1), cp("sim", 2), cp("sim", 1)}, want: "f0 and f2 have the same seed 1"},
		{name: "copies with one seed, forced", rs: []*Results{cp("sim", 1), cp("sim", 1)}, force: true},
		{name: "copies of two engines", rs: []*Results{cp("sim", 1), cp("live", 2)}, want: "f1 was played by the live engine, f0 by sim"},
		{name: "copies of two engines, forced", rs: []*Results{cp("sim", 1), cp("live", 2)}, force: true},
		{name: "two scenarios", rs: []*Results{cp("sim", 1), {Scenario: "t", Engine: "sim", Seed: 2}}, want: `f1 is scenario "t", f0 is "s"`},
	}
	for _, tt := range tests {
		names := []string{"f0", "f1", "f2", "f3"}
		err := CheckShards(tt.rs, names, tt.force)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: CheckShards = %v, want nil", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: CheckShards = %v, want an error containing %q", tt.name, err, tt.want)
		case strings.Contains(tt.want, "run") && strings.Contains(tt.want, "of run \"") && !errors.Is(err, ErrNotOneRun):
			t.Errorf("%s: %v does not wrap ErrNotOneRun", tt.name, err)
		}
	}
}

func TestMergeShardsKeepsRunID(t *testing.T) {
	sc := recScenario()
	a := roundTrip(t, record(sc, miniRun()).Results(RunInfo{Engine: "live"}))
	b := roundTrip(t, record(sc, miniRun()).Results(RunInfo{Engine: "live"}))
	a.RunID, a.Shard, a.StartAt = "run-1", &ShardInfo{0, 2}, "2026-12-01T10:00:00Z"
	b.RunID, b.Shard, b.StartAt = "run-1", &ShardInfo{1, 2}, "2026-12-01T10:00:00Z"
	if err := CheckShards([]*Results{a, b}, nil, false); err != nil {
		t.Fatal(err)
	}
	m, err := MergeResults(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if m.RunID != "run-1" || m.Shard != nil || m.StartAt != a.StartAt || m.Shards != 2 {
		t.Errorf("merged run_id %q shard %v start_at %q shards %d; want run-1, none, %s, 2", m.RunID, m.Shard, m.StartAt, m.Shards, a.StartAt)
	}
	if err := ValidateResults(roundTrip(t, m)); err != nil {
		t.Errorf("merged results: %v", err)
	}
}

func TestValidateResults(t *testing.T) {
	good := func() *Results {
		return roundTrip(t, record(recScenario(), miniRun()).Results(RunInfo{Engine: "sim"}))
	}
	if err := ValidateResults(good()); err != nil {
		t.Fatalf("a recorder's results: %v", err)
	}
	tests := []struct {
		name  string
		spoil func(r *Results)
		want  string
	}{
		{"null groups", func(r *Results) { r.Groups = nil }, `"groups" is null or missing`},
		{"null tenants", func(r *Results) { r.Tenants = nil }, `"tenants" is null`},
		{"other schema", func(r *Results) { r.Schema = "x" }, "schema"},
		{"outcomes over requests", func(r *Results) { r.Totals.OK++ }, "totals: its outcomes add up to"},
		{"a group's counts", func(r *Results) { r.Groups[0].Requests += 3 }, "group " + r0group(good()) + ": its outcomes"},
		{"more latencies than ok", func(r *Results) { r.Tenants[0].Latency.Count = r.Tenants[0].OK + 1 }, "latencies of"},
		{"negative latency", func(r *Results) { r.Routes[0].Latency.P99 = -1 }, "latency -1 ms"},
		{"negative duration", func(r *Results) { r.ModelDurationS = -5 }, "model_duration_s is -5"},
		{"time scale", func(r *Results) { r.TimeScale = 0 }, "time_scale 0"},
		{"tenant of no group", func(r *Results) { r.Tenants[0].Group = "nope" }, `group "nope", which groups does not list`},
		{"histograms", func(r *Results) { r.Histograms.Tenants = r.Histograms.Tenants[1:] }, "histograms has"},
		{"shard out of range", func(r *Results) { r.Shard = &ShardInfo{3, 3} }, "shard 3/3"},
	}
	for _, tt := range tests {
		r := good()
		tt.spoil(r)
		err := ValidateResults(r)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalidResults) {
			t.Errorf("%s: ValidateResults = %v, want an ErrInvalidResults containing %q", tt.name, err, tt.want)
		}
	}
	// A negative count does not decode, and the error names its field.
	_, err := DecodeResults([]byte(`{"schema": "stampede.results/v1", "totals": {"requests": -1}}`))
	if err == nil || !strings.Contains(err.Error(), "totals.requests") {
		t.Errorf("a negative count: DecodeResults = %v, want an error naming totals.requests", err)
	}
}

func r0group(r *Results) string { return r.Groups[0].Name }
