package scenarios

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// traceScenario returns testdata/replay/replay.yaml, a scenario of two
// tenant groups that replay replay.trace.
func traceScenario(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "replay", "replay.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeTraceScenario writes a copy of traceScenario beside its trace, the
// text trace, in a new temporary directory and returns the scenario's path.
func writeTraceScenario(t testing.TB, trace string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "replay.trace", trace)
	return writeFile(t, dir, "replay.yaml", traceScenario(t))
}

// writeFile writes data to the file name in dir and returns its path. It
// fails the test when the file cannot be written.
func writeFile(t testing.TB, dir, name, data string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTraceLoads(t *testing.T) {
	path := writeTraceScenario(t, "# comment\nt heavy 1\nr report 1000000 1000000\nr page 500000\nr report 1000000\nt rest 2\nr page 10 20\n")
	sc, err := LoadWith(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	tenants := sc.Expand()
	if got := len(tenants); got != 3 {
		t.Fatalf("Expand: %d tenants, want 3", got)
	}
	ms := time.Millisecond
	want := [][]TraceArrival{
		{{500 * ms, 0}, {1000 * ms, 1}, {2000 * ms, 1}, {3000 * ms, 1}},
		nil,
		{{10 * time.Microsecond, 0}, {30 * time.Microsecond, 0}},
	}
	for i, tn := range tenants {
		if got := tn.Trace; !slices.Equal(got, want[i]) {
			t.Errorf("tenant %s: trace %v, want %v", tn.Name, got, want[i])
		}
	}
	if got, want := tenants[2].Host, "b.example.com"; got != want {
		t.Errorf("tenant rest-2's host = %q, want %q", got, want)
	}
	if got, want := sc.Tenants[0].Load.Rate, 0.4; got != want {
		t.Errorf("heavy's mean rate = %v, want %v", got, want)
	}
	// Format writes what loads again to the same arrivals.
	var buf bytes.Buffer
	if err := sc.Format(&buf); err != nil {
		t.Fatal(err)
	}
	back := writeFile(t, filepath.Dir(path), "back.yaml", buf.String())
	sc2, err := LoadWith(back, nil)
	if err != nil {
		t.Fatalf("loading Format's output: %v\n%s", err, buf.String())
	}
	if got := sc2.Expand()[0].Trace; !slices.Equal(got, want[0]) {
		t.Errorf("after Format: heavy's trace %v, want %v", got, want[0])
	}
	// With keeps the trace.
	sc3, err := sc.With("backend.workers=4")
	if err != nil {
		t.Fatal(err)
	}
	if got := sc3.Expand()[0].Trace; !slices.Equal(got, want[0]) {
		t.Errorf("after With: heavy's trace %v, want %v", got, want[0])
	}
	// writeTrace writes what reads back the same.
	var tb bytes.Buffer
	if err := writeTrace(&tb, sc.LoadedTrace(), []string{"page", "report"}); err != nil {
		t.Fatal(err)
	}
	path2 := writeTraceScenario(t, tb.String())
	sc4, err := LoadWith(path2, nil)
	if err != nil {
		t.Fatalf("reading writeTrace's output: %v\n%s", err, tb.String())
	}
	for i, tn := range sc4.Expand() {
		if !slices.Equal(tn.Trace, want[i]) {
			t.Errorf("writeTrace round trip: tenant %s: %v, want %v", tn.Name, tn.Trace, want[i])
		}
	}
}

// writeTrace writes t in the companion-file format, routes naming the
// indexes its arrivals hold. Groups go in name order, tenants in number
// order.
func writeTrace(w io.Writer, t *Trace, routes []string) error {
	tw := NewTraceWriter(w)
	for _, g := range slices.Sorted(maps.Keys(t.Groups)) {
		for i, arr := range t.Groups[g] {
			if len(arr) == 0 {
				continue
			}
			tw.Tenant(g, i+1)
			byRoute := map[int32][]time.Duration{}
			var order []int32
			for _, a := range arr {
				if a.Route < 0 || int(a.Route) >= len(routes) {
					return fmt.Errorf("writing the trace: group %s tenant %d: route %d of %d", g, i+1, a.Route, len(routes))
				}
				if _, ok := byRoute[a.Route]; !ok {
					order = append(order, a.Route)
				}
				byRoute[a.Route] = append(byRoute[a.Route], a.At)
			}
			for _, r := range order {
				tw.Route(routes[r], byRoute[r])
			}
		}
	}
	return tw.Close()
}
