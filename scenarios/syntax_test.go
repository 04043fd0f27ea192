package scenarios

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"stampede/workerpool"
)

// parseStep is one step of a parser's table: the input, and the value it
// reads or a part of the error it returns.
type parseStep[T any] struct {
	in   string
	want T
	err  string
}

// checkParse runs parse, called name, over steps, holding what it reads to
// the step's want with equal; then, when more is not nil, hands more each
// value read for the test's own checks.
func checkParse[T any](t *testing.T, name string, parse func(string) (T, error), equal func(got, want T) bool, steps []parseStep[T], more func(step int, in string, got T)) {
	t.Helper()
	for i, c := range steps {
		got, err := parse(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("step %d: %s(%q) = %+v, %v; want error %q", i, name, c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || !equal(got, c.want) {
			t.Errorf("step %d: %s(%q) = %+v, %v; want %+v", i, name, c.in, got, err, c.want)
			continue
		}
		if more != nil {
			more(i, c.in, got)
		}
	}
}

// equalValues is == for checkParse.
func equalValues[T comparable](a, b T) bool { return a == b }

func TestParseRate(t *testing.T) {
	checkParse(t, "parseRate", parseRate, equalValues, []parseStep[float64]{
		{"5/s", 5, ""},
		{"30/m", 0.5, ""},
		{"0.2/s", 0.2, ""},
		{"1/h", 1.0 / 3600, ""},
		{" 2 / s ", 2, ""},
		{"0/s", 0, ""},
		{"5r/s", 5, ""}, // as the proxy's limits write it
		{"30r/m", 0.5, ""},
		{"0.3r/s", 0.3, ""},
		{"5rr/s", 0, "is not a rate"},
		{"r/s", 0, "is not a rate"},
		{"5", 0, "is not a rate"},
		{"fast", 0, "is not a rate"},
		{"5/d", 0, "unknown unit"},
		{"-1/s", 0, "negative"},
		{"NaN/s", 0, "is not a rate"},
		{"1e-323/h", 0, "too small"},
	}, nil)
}

func TestFormatRate(t *testing.T) {
	cases := []struct {
		in   float64
		want string
	}{
		{5, "5/s"}, {0.5, "0.5/s"}, {0.2, "0.2/s"}, {1.0 / 60, "1/m"}, {1.0 / 3600, "1/h"},
		{0.125, "0.125/s"}, {7.0 / 60, "7/m"}, {0, "0/s"}, {1.0 / 7, "0.14285714285714285/s"},
	}
	for i, c := range cases {
		got := formatRate(c.in)
		if got != c.want {
			t.Errorf("step %d: formatRate(%v) = %q, want %q", i, c.in, got, c.want)
		}
		if back, err := parseRate(got); err != nil || back != c.in {
			t.Errorf("step %d: parseRate(formatRate(%v)) = %v, %v", i, c.in, back, err)
		}
	}
}

func TestParseDuration(t *testing.T) {
	checkParse(t, "parseDuration", parseDuration, equalValues, []parseStep[time.Duration]{
		{"10m", 10 * time.Minute, ""},
		{"120s", 2 * time.Minute, ""},
		{"0s", 0, ""},
		{"0", 0, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"120", 0, "has no unit"},
		{"-1s", 0, "negative"},
		{"soon", 0, "is not a duration"},
	}, func(i int, _ string, got time.Duration) {
		if back, err := parseDuration(workerpool.FormatDuration(got)); err != nil || back != got {
			t.Errorf("step %d: workerpool.FormatDuration(%v) = %q does not read back", i, got, workerpool.FormatDuration(got))
		}
	})
}

func TestTemplate(t *testing.T) {
	cases := []struct {
		in   string
		i    int
		want string
		err  string
	}{
		{"site{i}.example.com", 7, "site7.example.com", ""},
		{"site{i:03}.example.com", 7, "site007.example.com", ""},
		{"site{i:03}.example.com", 1234, "site1234.example.com", ""},
		{"x.example.com", 3, "x.example.com", ""},
		{"{i}-{i}", 2, "2-2", ""},
		{"127.0.1.{i}", 9, "127.0.1.9", ""},
		{"site{n}", 1, "", "unknown placeholder {n}"},
		{"site{i:3}", 1, "", "unknown placeholder {i:3}"},
		{"site{i", 1, "", "{ without }"},
		{"site}", 1, "", "} without {"},
	}
	for k, c := range cases {
		tp, err := parseTemplate(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, errTemplate) {
				t.Errorf("step %d: parseTemplate(%q) error = %v, want %q", k, c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("step %d: parseTemplate(%q): %v", k, c.in, err)
			continue
		}
		if got := tp.expand(c.i); got != c.want {
			t.Errorf("step %d: %q.expand(%d) = %q, want %q", k, c.in, c.i, got, c.want)
		}
	}
}

func TestParseSLO(t *testing.T) {
	slo := func(metric, op string, threshold float64) SLO {
		return SLO{Metric: metric, Op: op, Threshold: threshold}
	}
	same := func(got, want SLO) bool {
		return got.Metric == want.Metric && got.Op == want.Op && math.Abs(got.Threshold-want.Threshold) <= 1e-12
	}
	checkParse(t, "parseSLO", parseSLO, same, []parseStep[SLO]{
		{"p99 < 1s", slo("p99", "<", 1000), ""},
		{"p999<=250ms", slo("p999", "<=", 250), ""},
		{"mean < 1.5s", slo("mean", "<", 1500), ""},
		{"max < 2m", slo("max", "<", 120000), ""},
		{"ok_rate > 99%", slo("ok_rate", ">", 0.99), ""},
		{"ok_rate >= 0.995", slo("ok_rate", ">=", 0.995), ""},
		{"rejected_rate < 5%", slo("rejected_rate", "<", 0.05), ""},
		{"timeout_rate <= 0", slo("timeout_rate", "<=", 0), ""},
		{"p98 < 1s", SLO{}, `unknown metric "p98" (did you mean "p9`},
		{"ok_rate > 99", SLO{}, "write a percent with %, as 99%"},
		{"ok_rate > 101%", SLO{}, "over 100%"},
		{"p99 == 1s", SLO{}, `unknown comparison "=="`},
		{"p99 1s", SLO{}, "not METRIC OP VALUE"},
		{"< 1s", SLO{}, "names no metric"},
		{"p99 < fast", SLO{}, "a latency needs a duration"},
	}, func(i int, in string, got SLO) {
		if got.Text != in {
			t.Errorf("step %d: parseSLO(%q).Text = %q", i, in, got.Text)
		}
		back, err := parseSLO(got.String())
		if err != nil || back.Threshold != got.Threshold || back.Op != got.Op {
			t.Errorf("step %d: %q.String() = %q reads back as %+v, %v", i, in, got.String(), back, err)
		}
	})
}

func TestSLOHolds(t *testing.T) {
	cases := []struct {
		text  string
		value float64
		want  bool
	}{
		{"p99 < 1s", 999, true}, {"p99 < 1s", 1000, false},
		{"p99 <= 1s", 1000, true}, {"ok_rate > 99%", 0.99, false},
		{"ok_rate >= 99%", 0.99, true}, {"ok_rate > 99%", 0.995, true},
	}
	for i, c := range cases {
		o, err := parseSLO(c.text)
		if err != nil {
			t.Fatal(err)
		}
		if got := o.Holds(c.value); got != c.want {
			t.Errorf("step %d: %q.Holds(%v) = %v, want %v", i, c.text, c.value, got, c.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	cases := []struct{ in, want string }{
		{"wokers", "workers"}, {"worekrs", "workers"}, {"Workers", "workers"},
		{"timeout", ""}, {"x", ""},
	}
	known := []string{"workers", "backlog", "routes"}
	for i, c := range cases {
		got := suggest(c.in, known)
		want := ""
		if c.want != "" {
			want = ` (did you mean "` + c.want + `"?)`
		}
		if got != want {
			t.Errorf("step %d: suggest(%q) = %q, want %q", i, c.in, got, want)
		}
	}
}

// FuzzParse feeds the parser anything; it must never panic, and whatever
// it accepts must format and load again.
func FuzzParse(f *testing.F) {
	addFileSeeds(f)
	f.Add([]byte(base), "proxy.limit_conn.per_key=off")
	f.Add([]byte(base), "tenants.sites.load={<<: *x}")
	f.Add([]byte("a: &a [*a, *a]\nb: *a\n"), "a.0.b=1")
	f.Add([]byte("tenants: [{load: &l {routes: {<<: *l}}}]"), "tenants.0.load.routes.x=1")
	f.Add([]byte("backend: &a {<<: {<<: *a}}\n"), "backend.workers.x=1")
	f.Fuzz(func(t *testing.T, data []byte, set string) {
		sc, err := parseFuzz(data, set)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not an *Error: %v", err, err)
			}
			return
		}
		_ = sc.Expand()
		_, again := formatted(t, sc)
		if diff := diffScenarios(again, sc); diff != "" {
			t.Fatalf("round trip changed the scenario:\n%s", diff)
		}
	})
}
