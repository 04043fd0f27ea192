package accesslog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"stampede/workerpool"
)

// importString runs Import over an in-memory log.
func importString(t *testing.T, log, format string, opts ImportOptions) (*Summary, string, string) {
	t.Helper()
	opts.Logs = []string{"access.log"}
	opts.Format = mustNginx(t, format)
	opts.Name, opts.TraceFile = "inc", "inc.trace"
	opts.Open = func(string) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(log)), nil }
	var sc, tr bytes.Buffer
	sum, err := Import(context.Background(), opts, &sc, &tr)
	if err != nil {
		t.Fatal(err)
	}
	return sum, sc.String(), tr.String()
}

const calmFormat = `$host [$time_local] "$request" $status $msec $request_time $upstream_response_time`

// TestImportServiceFromCalmPeriods: with nginx's times only, the service
// times come from the seconds when fewer requests than workers were at the
// backend, not from a burst whose upstream times hold its backlog wait.
func TestImportServiceFromCalmPeriods(t *testing.T) {
	var b strings.Builder
	line := func(at, took float64) {
		fmt.Fprintf(&b, "a.example.com [01/Dec/2026:23:04:38 +0000] \"GET /app HTTP/1.1\" 200 %.3f %.3f %.3f\n", 1796166278+at+took, took, took)
	}
	// Calm: one request every 2 s, 100 ms each, for 200 s.
	for i := range 100 {
		line(float64(2*i), 0.100)
	}
	// A burst at 300 s: 50 requests at once into 2 workers, each waiting
	// for those before it: upstream times 0.1 s, 0.1 s, 0.2 s, 0.2 s, ...
	for i := range 50 {
		line(300, 0.1*float64(i/2+1))
	}
	sum, sc, _ := importString(t, b.String(), calmFormat, ImportOptions{Workers: 2})
	if !strings.Contains(sum.ServiceFrom, "while the pool was not saturated (100 of 150 requests") {
		t.Errorf("ServiceFrom = %q, want the 100 calm requests of 150", sum.ServiceFrom)
	}
	m := regexp.MustCompile(`service: "(empirical:[^"]*)"`).FindStringSubmatch(sc)
	if m == nil {
		t.Fatalf("no empirical service in\n%s", sc)
	}
	d, err := workerpool.ParseDist(m[1])
	if err != nil {
		t.Fatal(err)
	}
	e := d.(workerpool.Empirical)
	for _, q := range []float64{0, 50, 99, 100} {
		if got := e.Quantile(q); got < 99*time.Millisecond || got > 101*time.Millisecond {
			t.Errorf("service p%v = %v, want the calm 100ms (the burst's waits left out)", q, got)
		}
	}
}

// TestImportTrace: arrivals are the logged time less $request_time, from
// the first arrival, per tenant and route, to the millisecond.
func TestImportTrace(t *testing.T) {
	log := "" +
		"a.example.com [01/Dec/2026:23:04:38 +0000] \"GET /app/item/1 HTTP/1.1\" 200 1796166278.500 0.500 0.400\n" + // arrives at 0
		"b.example.com [01/Dec/2026:23:04:38 +0000] \"GET /app/item/2?x HTTP/1.1\" 200 1796166279.250 0.050 0.040\n" + // 1.2 s
		"a.example.com [01/Dec/2026:23:04:38 +0000] \"GET /api/method/run HTTP/1.1\" 503 1796166280.001 0.001 -\n" + // 2 s, never upstream
		"a.example.com [01/Dec/2026:23:04:38 +0000] \"GET /app/item/3 HTTP/1.1\" 200 1796166281.000 0.000 0.000\n" // 3 s
	sum, sc, tr := importString(t, log, calmFormat, ImportOptions{})
	if sum.Used != 4 || sum.Precision != time.Millisecond {
		t.Errorf("Used, Precision = %d, %v; want 4, 1ms", sum.Used, sum.Precision)
	}
	for _, want := range []string{"t a-example-com 1\nr app-item-id 0 3000000\nr api-method-run 2000000\n", "t others 1\nr app-item-id 1200000\n"} {
		if !strings.Contains(tr, want) {
			t.Errorf("the trace lacks %q:\n%s", want, tr)
		}
	}
	// a held three quarters of the worker time: a group of its own.
	if !strings.Contains(sc, "group: a-example-com  # heavy") || !strings.Contains(sc, `host: "b.example.com"`) || !strings.Contains(sc, "duration: 4s") {
		t.Errorf("the scenario lacks the heavy group, the other host or the 4s duration:\n%s", sc)
	}
}
