package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

func keysOf(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func sorted(s ...string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}

var countsFields = []string{"requests", "ok", "rejected", "backend_errors", "gateway_timeouts", "client_timeouts", "dropped", "errors", "status"}

// TestResultsJSONFieldNames holds results.json to DESIGN.md's contract:
// every field it names, spelled as it spells them, plus only the documented
// extensions.
func TestResultsJSONFieldNames(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, record(recScenario(), miniRun()).Results(RunInfo{Engine: "sim", Version: "v1", CommandLine: "stampede run x.yaml"})); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	contract := []string{"schema", "scenario", "engine", "time_scale", "model_duration_s", "wall_duration_s", "interrupted", "settings", "totals", "groups", "tenants", "routes", "backend", "slo", "validity"}
	extensions := []string{"seed", "version", "command_line", "series", "histograms"}
	check := func(what string, obj any, want []string) {
		t.Helper()
		m, ok := obj.(map[string]any)
		if !ok {
			t.Errorf("%s is %T, want an object", what, obj)
			return
		}
		if got := keysOf(m); !reflect.DeepEqual(got, sorted(want...)) {
			t.Errorf("%s has fields %v, want %v", what, got, sorted(want...))
		}
	}
	check("results.json", doc, append(contract, extensions...))
	if doc["schema"] != "stampede.results/v1" {
		t.Errorf("schema = %v, want stampede.results/v1", doc["schema"])
	}
	lat := []string{"count", "min", "mean", "p50", "p90", "p95", "p99", "p999", "max"}
	check("totals", doc["totals"], countsFields)
	check("groups[0]", doc["groups"].([]any)[0], append([]string{"name", "tenants", "latency_ms"}, countsFields...))
	check("groups[0].latency_ms", doc["groups"].([]any)[0].(map[string]any)["latency_ms"], lat)
	check("tenants[0]", doc["tenants"].([]any)[0], append([]string{"name", "group", "host", "latency_ms"}, countsFields...))
	check("routes[0]", doc["routes"].([]any)[0], append([]string{"name", "latency_ms"}, countsFields...))
	check("backend", doc["backend"], []string{"workers", "busy_max", "queue_max", "utilization"})
	check("slo[0]", doc["slo"].([]any)[0], []string{"name", "pass", "value", "threshold", "group", "metric", "op"})
	// No limiter keys were sampled here, so the hosts stand in for them.
	check("series", doc["series"], []string{"step_s", "groups", "backend", "keys", "limit", "hosts"})
	check("histograms", doc["histograms"], []string{"tenants", "routes", "intervals"})
	check("status of tenant 2", doc["tenants"].([]any)[1].(map[string]any)["status"], []string{"502", "503"})

	// Latencies are milliseconds with at most 3 decimals.
	re := regexp.MustCompile(`"(min|mean|p50|p90|p95|p99|p999|max)": (-?[0-9.e+-]+)`)
	for _, m := range re.FindAllStringSubmatch(buf.String(), -1) {
		if i := strings.IndexByte(m[2], '.'); i >= 0 && len(m[2])-i-1 > 3 || strings.ContainsAny(m[2], "e") {
			t.Errorf("%s written as %s, want at most 3 decimals", m[1], m[2])
		}
	}
}

func TestWriteJSONNeverWritesNull(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, &Results{Scenario: "empty", Groups: []GroupResult{{Name: "g"}}, Series: &Series{}}); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	if strings.Contains(s, "null") {
		t.Errorf("results.json holds null:\n%s", s)
	}
	for _, want := range []string{`"settings": {}`, `"status": {}`, `"tenants": []`, `"slo": []`, `"schema": "stampede.results/v1"`} {
		if !strings.Contains(s, want) {
			t.Errorf("results.json lacks %s:\n%s", want, s)
		}
	}
}

func TestWriteJSONIsDeterministic(t *testing.T) {
	sc := recScenario()
	sc.Settings = map[string]string{"b.z": "1", "a.y": "2", "c.x": "3"}
	var outs []string
	for i := 0; i < 3; i++ {
		r := record(sc, miniRun())
		r.SampleKeys(0, map[string]int{"a": 1, "b": 1, "c": 1, "d": 2})
		var buf bytes.Buffer
		if err := WriteJSON(&buf, r.Results(RunInfo{Engine: "sim", Wall: time.Second})); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, buf.String())
	}
	for i := 1; i < len(outs); i++ {
		if outs[i] != outs[0] {
			t.Errorf("step %d: results.json differs from the first run's", i)
		}
	}
	if i, j := strings.Index(outs[0], `"a.y"`), strings.Index(outs[0], `"b.z"`); i < 0 || j < i {
		t.Errorf("settings not in key order")
	}
}

func TestReadResults(t *testing.T) {
	dir := t.TempDir()
	res := record(recScenario(), miniRun()).Results(RunInfo{Engine: "live", Wall: 2 * time.Second})
	var buf bytes.Buffer
	if err := WriteJSON(&buf, res); err != nil {
		t.Fatal(err)
	}
	fileRoundTrip(t, buf.Bytes(), ReadResults, WriteJSON)
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	cases := []struct {
		name, path string
		notResults bool
		want       string
	}{
		{"missing", filepath.Join(dir, "nope.json"), false, "no such file"},
		{"not json", write("a.json", "hello"), true, "a.json"},
		{"other schema", write("b.json", `{"schema": "stampede.comparison/v1"}`), true, `schema is "stampede.comparison/v1"`},
		{"no schema", write("c.json", `{"scenario": "x"}`), true, `no "schema"`},
		{"bad field", write("d.json", `{"schema": "stampede.results/v1", "groups": 3}`), true, "d.json"},
	}
	for i, c := range cases {
		_, err := ReadResults(c.path)
		if err == nil {
			t.Errorf("step %d: %s: ReadResults gave no error", i, c.name)
			continue
		}
		if errors.Is(err, ErrNotResults) != c.notResults || !strings.Contains(err.Error(), c.want) {
			t.Errorf("step %d: %s: error %q (ErrNotResults %v), want one containing %q (ErrNotResults %v)", i, c.name, err, errors.Is(err, ErrNotResults), c.want, c.notResults)
		}
	}
}

func TestPassed(t *testing.T) {
	cases := []struct {
		slo  []SLOResult
		want bool
	}{
		{nil, true},
		{[]SLOResult{{Pass: true}, {Pass: true}}, true},
		{[]SLOResult{{Pass: true}, {Pass: false}}, false},
	}
	for i, c := range cases {
		if got := (&Results{SLO: c.slo}).Passed(); got != c.want {
			t.Errorf("step %d: Passed() = %v, want %v", i, got, c.want)
		}
	}
}
