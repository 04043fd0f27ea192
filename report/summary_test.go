package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"stampede/workload"
)

func TestWriteSummary(t *testing.T) {
	res := record(recScenario(), miniRun()).Results(RunInfo{Engine: "sim", Wall: 1234 * time.Millisecond, Backend: statsOf(8, 8, 3, 0)})
	var buf bytes.Buffer
	if err := WriteSummary(&buf, res); err != nil {
		t.Fatal(err)
	}
	want := `scenario mini-stock: engine sim, time scale 0.01, model 2.02 min, wall 1.23 s
settings: proxy.limit_conn.per_key=4
group        tenants  requests   ok  rejected  502  504  client timeouts  dropped  errors    p50    p99     max
other-sites        3       104  100         1    1    0                1        1       0  50 ms  99 ms  100 ms
user-x             1         8    4         4    0    0                0        0       0    3 s    3 s     3 s
total              4       112  104         5    1    0                1        1       0      -      -       -
backend: 8 workers, busy max 8, queue max 3, utilization 0%
SLO pass  other-sites: p99 < 1s (99 ms)
SLO FAIL  user-x: ok_rate > 99% (50%)
1 of 2 SLOs failed
`
	if got := buf.String(); got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
}

func TestFormatMs(t *testing.T) {
	cases := []struct {
		ms   float64
		want string
	}{
		{0, "0 ms"}, {0.512, "0.512 ms"}, {5.126, "5.13 ms"}, {31.24, "31.2 ms"}, {212.345, "212 ms"},
		{1000, "1 s"}, {1500, "1.5 s"}, {12345, "12.3 s"}, {180_000, "3 min"},
	}
	for i, c := range cases {
		if got := formatMs(c.ms); got != c.want {
			t.Errorf("step %d: formatMs(%v) = %q, want %q", i, c.ms, got, c.want)
		}
	}
	pct := []struct {
		f    float64
		want string
	}{{0.5, "50%"}, {0.995, "99.5%"}, {0.99999, "99.999%"}, {1, "100%"}, {0.0001234, "0.012%"}}
	for i, c := range pct {
		if got := formatPercent(c.f); got != c.want {
			t.Errorf("step %d: formatPercent(%v) = %q, want %q", i, c.f, got, c.want)
		}
	}
}

func TestWriteSummaryLiveGenerator(t *testing.T) {
	for i, tt := range []struct {
		late workload.Lateness
		// noVerdict: results written before the validity verdict
		// existed; only those still get the old lateness warning.
		noVerdict bool
		want      string
	}{
		{workload.Lateness{Sends: 10, P50: -2 * time.Microsecond, P99: 120 * time.Microsecond}, false,
			"live engine: tare 0.612 ms wall off every latency; sends late p50 -0.002 ms, p99 0.120 ms wall (12 ms model)\n"},
		// Conclusive by its verdict: the verdict is the one rule, no warning.
		{workload.Lateness{Sends: 10, P50: time.Millisecond, P99: 3 * time.Millisecond}, false,
			"live engine: tare 0.612 ms wall off every latency; sends late p50 1.000 ms, p99 3.000 ms wall (300 ms model)\n"},
		{workload.Lateness{Sends: 10, P50: time.Millisecond, P99: 3 * time.Millisecond}, true,
			"live engine: tare 0.612 ms wall off every latency; sends late p50 1.000 ms, p99 3.000 ms wall (300 ms model)\n" +
				"warning: the generator sent 300 ms of model time behind its schedule at p99; this machine could not play the scenario at time scale 0.01, and latencies include that delay (try a larger time_scale)\n"},
	} {
		res := record(recScenario(), miniRun()).Results(RunInfo{Engine: "live", Tare: 612 * time.Microsecond, SendLateness: tt.late, Backend: statsOf(8, 8, 3, 0)})
		if tt.noVerdict {
			res.Validity = nil
		}
		var buf bytes.Buffer
		if err := WriteSummary(&buf, res); err != nil {
			t.Fatal(err)
		}
		if got := buf.String(); !strings.Contains(got, "\nbackend: 8 workers, busy max 8, queue max 3, utilization 0%\n"+tt.want+"SLO") {
			t.Errorf("step %d: summary:\n%s\nwant after the backend line:\n%s", i, got, tt.want)
		}
	}
}

// TestBackendNotMeasured is a --target run without --backend-stats: the
// summary and the report say so instead of showing zeros.
func TestBackendNotMeasured(t *testing.T) {
	res := record(recScenario(), miniRun()).Results(RunInfo{Engine: "live"}) // no samples, no stats
	var buf bytes.Buffer
	if err := WriteSummary(&buf, res); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); !strings.Contains(got, "backend: not measured") || strings.Contains(got, "busy max 0") {
		t.Errorf("summary of an unmeasured backend:\n%s\nwant \"backend: not measured\" and no zeros", got)
	}
	buf.Reset()
	if err := writeHTML(&buf, res); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if !strings.Contains(page, `id="backend-not-measured"`) || strings.Contains(page, `id="chart-backend"`) || strings.Contains(page, `<table id="backend">`) {
		t.Errorf("the report of an unmeasured backend does not say so, or still shows the backend's chart or table")
	}
}
