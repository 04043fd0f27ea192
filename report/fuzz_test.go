package report

import (
	"bytes"
	"io"
	"testing"

	"stampede/scenarios"
)

// FuzzDecodeResults feeds arbitrary documents to the results.json reader
// and, when one is accepted, to everything that reads results: writing it
// again, the summary, the interval log, merging it with itself and a
// comparison of it. None may panic.
func FuzzDecodeResults(f *testing.F) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, record(recScenario(), miniRun()).Results(RunInfo{Engine: "sim"})); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(`{"schema": "stampede.results/v1"}`))
	f.Add([]byte(`{"schema": "stampede.results/v1", "groups": [{"name": "g"}], "histograms": {"tenants": [], "routes": []}, "series": {"step_s": 1, "keys": [{"key": "k", "t": [1], "in_flight": []}]}}`))
	f.Add([]byte(`{"schema": "stampede.results/v1", "histograms": {"intervals": [{"group": "g", "t": 1, "h": "HISTFAAAAB"}]}, "series": {"step_s": 1}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeResults(b)
		if err != nil {
			return
		}
		WriteJSON(io.Discard, r)
		WriteSummary(io.Discard, r)
		WriteHlog(io.Discard, r)
		if m, err := MergeResults(r, r); err == nil {
			WriteJSON(io.Discard, m)
		}
		NewComparisonFor(r.Scenario, Names{"a.b"}, []Point{NewPoint(Names{"1"}, "r.json", r)}, scenarios.Recommend{})
	})
}
