package scenarios

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

func TestTraceBad(t *testing.T) {
	for _, tc := range []struct{ name, trace, want string }{
		{"no group", "t nobody 1\n", `no tenant group "nobody"`},
		{"tenant out of range", "t rest 3\n", "want a number from 1 to 2"},
		{"twice", "t rest 1\nt rest 1\n", "appears twice"},
		{"r first", "r page 1\n", "before any t line"},
		{"unknown route", "t heavy 1\nr nope 1\n", `no route "nope"`},
		{"route not in mix", "t rest 1\nr report 1\n", "not among group rest's load.routes"},
		{"bad gap", "t rest 1\nr page x\n", `"x" is not a gap`},
		{"past the end", "t rest 1\nr page 9000000 2000000\n", "not before the end of the run"},
		{"bad record", "q\n", `"q" is not t GROUP N`},
	} {
		path := writeTraceScenario(t, tc.trace)
		_, err := LoadWith(path, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: LoadWith = %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	dir := t.TempDir()
	if _, err := LoadWith(writeFile(t, dir, "s.yaml", strings.Replace(traceScenario(t), "trace: replay.trace\n", "", 1)), nil); err == nil || !strings.Contains(err.Error(), "names no trace") {
		t.Errorf("model trace without a trace file: LoadWith = %v, want an error saying so", err)
	}
	if _, err := LoadWith(writeFile(t, dir, "s.yaml", strings.Replace(traceScenario(t), "{model: trace, routes: {page: 1}}", "{model: trace, rate: 5/s, routes: {page: 1}}", 1)), nil); err == nil || !strings.Contains(err.Error(), "rate is for the open or closed model") {
		t.Errorf("trace with a rate: LoadWith = %v, want an error saying so", err)
	}
}

func FuzzParseTrace(f *testing.F) {
	for _, s := range []string{"t heavy 1\nr report 1000000 1000000\nr page 500000\n", "t rest 2\nr page 10 20\n", "# c\n\nt rest 1\nr page 1\nr page 1\n", "r x", "t heavy 0"} {
		f.Add(s)
	}
	sc, err := LoadWith(writeTraceScenario(f, ""), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tr, err := parseTrace(strings.NewReader(s), sc)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") {
				t.Fatalf("parseTrace(%q): error %q names no line", s, err)
			}
			return
		}
		for g, tenants := range tr.Groups {
			for i, arr := range tenants {
				for j, a := range arr {
					if a.At < 0 || a.At >= sc.Duration || j > 0 && a.At < arr[j-1].At {
						t.Fatalf("parseTrace(%q): group %s tenant %d arrival %d at %v: out of order or range", s, g, i+1, j, a.At)
					}
				}
			}
		}
	})
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
