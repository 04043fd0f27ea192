package scenarios

import (
	"strings"
	"testing"
)

// TestTraceBad loads scenarios whose trace must not load: each mistake is
// an error that says what is wrong.
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

// FuzzParseTrace holds parseTrace to an error that names its line, or
// arrivals in order within the run.
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
