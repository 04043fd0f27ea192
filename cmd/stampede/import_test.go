package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"stampede/accesslog"
	"stampede/fakebackend"
	"stampede/internal/nginxtest"
	"stampede/internal/testproc"
	"stampede/limiterproxy"
	"stampede/live"
	"stampede/report"
	"stampede/scenarios"
	"stampede/sim"
	"stampede/workload"
)

// importLog writes a small log in importFormat: hosts a, b, c, of which c
// sends slow reports; one line in bad lines (every bad-th) does not match.
func importLog(t *testing.T, dir string, n, bad int, gz bool) string {
	t.Helper()
	var b bytes.Buffer
	for i := range n {
		if bad > 0 && i%bad == bad-1 {
			b.WriteString("this is not a log line\n")
			continue
		}
		host := []string{"a.example.com", "b.example.com", "c.example.com"}[i%3]
		path, rt := fmt.Sprintf("/app/item/%d", i), 0.020+float64(i%7)/1000
		if host == "c.example.com" && i%2 == 0 {
			path, rt = "/api/method/stock_balance", 30
		}
		end := 1796166278.0 + float64(i)*0.1 + rt
		fmt.Fprintf(&b, "%s 10.0.0.%d [01/Dec/2026:23:04:38 +0000] \"GET %s?x=1 HTTP/1.1\" 200 100 %.3f %.3f %.3f\n", host, i%5, path, end, rt, rt)
	}
	name := filepath.Join(dir, "access.log")
	data := b.Bytes()
	if gz {
		name += ".gz"
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		w.Write(data)
		w.Close()
		data = z.Bytes()
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

const importFormat = `$host $remote_addr [$time_local] "$request" $status $body_bytes_sent $msec $request_time $upstream_response_time`

func TestImportCLI(t *testing.T) {
	ctx := context.Background()
	t.Run("trace", func(t *testing.T) {
		dir := t.TempDir()
		log := importLog(t, dir, 600, 0, true)
		out := filepath.Join(dir, "inc.yaml")
		code, stdout, stderr := runCLI(t, ctx, "import", log, "--log-format", importFormat, "--workers", "4", "-o", out)
		if code != 0 {
			t.Fatalf("exit %d: %s%s", code, stdout, stderr)
		}
		for _, want := range []string{"600 lines read, 600 used, 0 skipped, 0 bad", "to 1ms ($msec)", "heavy: c.example.com", "stampede compare"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("summary lacks %q:\n%s", want, stdout)
			}
		}
		sc, err := scenarios.LoadWith(out, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, tn := range sc.Expand() {
			n += len(tn.Trace)
		}
		if n != 600 {
			t.Errorf("the trace holds %d arrivals, want 600", n)
		}
		// Both engines play the trace: every arrival, once.
		for _, engine := range []string{"sim", "live"} {
			runDir := filepath.Join(dir, "run-"+engine)
			// A busy machine makes the live run inconclusive (exit 4): its
			// SLO verdicts decide nothing, and its counts still stand.
			if code, so, se := runCLI(t, ctx, "run", out, "--engine", engine, "--set", "time_scale=0.05", "--no-progress", "-o", runDir); code != 0 && !(code == 4 && engine == "live") {
				t.Fatalf("run --engine %s on the imported file: exit %d\n%s%s", engine, code, so, se)
			}
			res := readJSON[report.Results](t, filepath.Join(runDir, "results.json"))
			want := map[string]uint64{}
			for _, tn := range sc.Expand() {
				want[tn.Host] = uint64(len(tn.Trace))
			}
			for _, tr := range res.Tenants {
				if tr.Requests != want[tr.Host] {
					t.Errorf("%s: tenant %s sent %d requests, want its trace's %d", engine, tr.Host, tr.Requests, want[tr.Host])
				}
			}
		}
	})
	t.Run("fit and remote_addr", func(t *testing.T) {
		dir := t.TempDir()
		log := importLog(t, dir, 600, 0, false)
		out := filepath.Join(dir, "fit.yaml")
		code, stdout, stderr := runCLI(t, ctx, "import", log, "--log-format", importFormat, "--fit", "--tenant-key", "$remote_addr", "-o", out)
		if code != 0 {
			t.Fatalf("exit %d: %s%s", code, stdout, stderr)
		}
		sc, err := scenarios.LoadWith(out, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := sc.TenantCount(); got != 5 {
			t.Errorf("%d tenants, want the log's 5 client addresses", got)
		}
		for _, g := range sc.Tenants {
			if g.Load.Model != scenarios.Open || len(g.Load.Stages) == 0 {
				t.Errorf("group %s: model %s with %d stages, want open with stages", g.Group, g.Load.Model, len(g.Load.Stages))
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "fit.trace")); err == nil {
			t.Error("--fit wrote a trace")
		}
	})
	t.Run("own variable named", func(t *testing.T) {
		dir := t.TempDir()
		log := importLog(t, dir, 30, 0, false)
		data, _ := os.ReadFile(log)
		os.WriteFile(log, bytes.ReplaceAll(data, []byte("\n"), []byte(" acme\n")), 0o644)
		code, stdout, stderr := runCLI(t, ctx, "import", log, "--log-format", importFormat+" $tenant", "--log-var", "tenant", "-o", filepath.Join(dir, "x.yaml"))
		if code != 0 {
			t.Errorf("--log-var tenant: exit %d, want 0\n%s%s", code, stdout, stderr)
		}
	})
	t.Run("lenient", func(t *testing.T) {
		dir := t.TempDir()
		log := importLog(t, dir, 600, 50, false)
		code, stdout, stderr := runCLI(t, ctx, "import", log, "--log-format", importFormat, "--lenient", "-o", filepath.Join(dir, "x.yaml"))
		if code != 0 || !strings.Contains(stdout, "12 bad") || !strings.Contains(stdout, "line 50, column") {
			t.Errorf("--lenient with 2%% bad lines: exit %d, want 0 with the bad lines counted and the first shown\n%s%s", code, stdout, stderr)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		bad  int
		want string
	}{
		{"too many bad lines", nil, 50, "12 of 600 lines (2.0%) do not match"},
		{"unknown variable", []string{"--log-format", "$host $request_tme"}, 0, "$request_tme is not an nginx variable (did you mean $request_time?)"},
		{"malformed format", []string{"--log-format", "log_format main '$host"}, 0, "is not closed"},
		{"empty window", []string{"--from", "2030-01-01T00:00:00Z"}, 0, "holds no request"},
		{"window backwards", []string{"--from", "2026-12-02T00:00:00Z", "--to", "2026-12-01T00:00:00Z"}, 0, "is not after --from"},
		{"bad time", []string{"--from", "yesterday"}, 0, `"yesterday" is not a time`},
		{"no time in format", []string{"--log-format", `$host "$request" $status`}, 0, "has no time"},
		{"bad tenant key", []string{"--tenant-key", "$cookie_x"}, 0, "want $host or $remote_addr"},
		{"missing file", []string{"/nonexistent/access.log"}, 0, "/nonexistent/access.log"},
		{"own variable", []string{"--log-format", importFormat + " $tenant"}, 0, "name it with --log-var tenant"},
		{"gunicorn format without worker time", []string{"--gunicorn-log", "/dev/null", "--gunicorn-format", `%(h)s "%(r)s"`}, 0, "has no worker time"},
		{"adjacent variables", []string{"--log-format", "$host$request_uri $msec"}, 0, "follow each other with nothing between them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log := importLog(t, dir, 600, tc.bad, false)
			args := []string{"import", log, "--log-format", importFormat, "-o", filepath.Join(dir, "x.yaml")}
			args = append(args, tc.args...)
			code, stdout, stderr := runCLI(t, ctx, args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want 2 with an error saying %q\n%s%s", code, tc.want, stdout, stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "x.yaml")); err == nil {
				t.Error("a failed import wrote its scenario")
			}
		})
	}
}

// roundTripScenario has three groups: a heavy tenant whose constant-time
// reports arrive evenly (so that which of them limit_conn rejects does not
// hang on a draw or a millisecond), and two groups of pages of uniform
// service time (so that their p50 and p99 are known to a few percent from
// a few hundred draws).
const roundTripScenario = `name: roundtrip
duration: 1m
time_scale: 0.1
seed: 3
backend:
  workers: 8
  timeout: 0s
  routes:
    - {name: page, path: /app/item, service: "uniform:100ms..200ms"}
    - {name: report, path: /api/method/stock_balance, service: 2500ms}
proxy:
  read_timeout: 60s
  limit_conn: {key: $host, per_key: 2}
tenants:
  - group: heavy
    host: x.example.com
    load: {model: open, arrivals: constant, rate: 3/s, routes: {report: 1}}
  - group: regular
    count: 5
    host: site{i}.example.com
    load: {model: open, rate: 2/s, routes: {page: 1}}
  - group: light
    count: 10
    host: light{i}.example.com
    load: {model: open, rate: 0.5/s, routes: {page: 1}}
slo:
  regular: ["p99 < 1s"]
  light: ["p99 < 1s"]
`

const roundTripLogFormat = `log_format rt '$host $remote_addr [$time_local] "$request" $status $body_bytes_sent $msec $request_time $upstream_response_time $upstream_status "$http_user_agent"';`

// TestImportRoundTrip plays a scenario live through real nginx in front of
// the fake backend writing its gunicorn access log, imports both logs, and
// holds the imported scenario's simulation to the live run: the same
// requests per tenant, the same rejected share per group within 0.02, p50
// and p99 within 10% (widened by the live run's own measured send
// lateness), the heavy tenant singled out, and compare's recommendation.
func TestImportRoundTrip(t *testing.T) {
	nginxtest.Require(t)
	dir := t.TempDir()
	origPath := filepath.Join(dir, "roundtrip.yaml")
	if err := os.WriteFile(origPath, []byte(roundTripScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := scenarios.LoadWith(origPath, nil)
	if err != nil {
		t.Fatal(err)
	}

	// The backend, writing gunicorn's log.
	gpath := filepath.Join(dir, "gunicorn.log")
	gfile, err := os.Create(gpath)
	if err != nil {
		t.Fatal(err)
	}
	defer gfile.Close()
	alog := fakebackend.NewAccessLog(gfile)
	opts := scenarioBackend(sc)
	opts.AccessLog = alog
	be, err := fakebackend.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln := testproc.Listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		be.Serve(ctx, ln, io.Discard)
	}()
	defer func() {
		cancel()
		<-served
	}()

	// Real nginx in front, with the scenario's limits and a log_format.
	npath := filepath.Join(dir, "access.log")
	format := strings.TrimPrefix(strings.TrimSuffix(roundTripLogFormat, ";"), "log_format ")
	url := nginxtest.Start(t, func(w io.Writer, listen string) error {
		var b strings.Builder
		if err := limiterproxy.WriteNginx(&b, sc.Proxy.Limits, limiterproxy.NginxOptions{Listen: listen, Upstream: ln.Addr().String(), ReadTimeout: sc.Proxy.ReadTimeout, TimeScale: sc.TimeScale}); err != nil {
			return err
		}
		conf := strings.Replace(b.String(), "access_log off;", "log_format "+format+";\n    access_log "+npath+" rt;", 1)
		_, err := io.WriteString(w, conf)
		return err
	})

	liveRec := report.NewRecorder(sc)
	info, err := live.Run(ctx, sc, liveRec, live.Options{Target: url, BackendStatsURL: "http://" + ln.Addr().String() + fakebackend.StatsPath})
	if err != nil {
		t.Fatal(err)
	}
	res := liveRec.Results(info)
	if err := alog.Flush(); err != nil {
		t.Fatal(err)
	}
	lateMs, lateMaxMs := 0.0, 0.0
	if res.SendLateness != nil {
		lateMs, lateMaxMs = max(res.SendLateness.P99, 0), max(res.SendLateness.Max, 0)
	}
	t.Logf("live: %d requests, tare %.3f ms wall, send lateness p99 %.3f ms wall (%+v)", res.Totals.Requests, res.TareMS, lateMs, res.SendLateness)

	// Import both logs.
	impPath := filepath.Join(dir, "imported.yaml")
	code, out, errOut := runCLI(t, context.Background(), "import", npath, "--log-format", roundTripLogFormat,
		"--gunicorn-log", gpath, "--log-time-scale", "0.1", "--workers", "8", "--timeout", "0s", "-o", impPath)
	if code != 0 {
		t.Fatalf("import: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("import:\n%s", out)
	if !strings.Contains(out, "heavy: x.example.com ") {
		t.Errorf("import's summary does not single out x.example.com as heavy:\n%s", out)
	}
	imp, err := scenarios.LoadWith(impPath, []string{"proxy.limit_conn.per_key=2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(imp.Tenants) < 2 || imp.Tenants[0].Host != "x.example.com" {
		t.Errorf("the imported scenario's first group is %+v, want the heavy x.example.com alone", imp.Tenants[0])
	}

	// Replay it in the simulator.
	var got simCollector
	if _, err := sim.Simulate(context.Background(), imp, &got, sim.Options{}); err != nil {
		t.Fatal(err)
	}
	hostOf := map[int32]string{}
	for _, tn := range imp.Expand() {
		hostOf[int32(tn.Index)] = tn.Host
	}
	groupOf := map[string]string{} // host → the original's group
	for _, tn := range sc.Expand() {
		groupOf[tn.Host] = tn.Group
	}
	simReq := map[string]uint64{}
	type groupStats struct {
		requests, rejected uint64
		lat                []float64
	}
	simGroup := map[string]*groupStats{}
	for _, r := range got.results {
		h := hostOf[r.Tenant]
		simReq[h]++
		g := simGroup[groupOf[h]]
		if g == nil {
			g = &groupStats{}
			simGroup[groupOf[h]] = g
		}
		g.requests++
		switch r.Outcome {
		case workload.Rejected:
			g.rejected++
		case workload.OK:
			g.lat = append(g.lat, float64(r.Latency)/float64(time.Millisecond))
		}
	}
	for _, tr := range res.Tenants {
		if simReq[tr.Host] != tr.Requests {
			t.Errorf("tenant %s: %d requests replayed, want the live run's %d", tr.Host, simReq[tr.Host], tr.Requests)
		}
	}
	if len(simReq) != len(res.Tenants) {
		t.Errorf("%d tenants replayed, want the live run's %d", len(simReq), len(res.Tenants))
	}
	// The backend's own lateness, from its log: how much longer than their
	// constant 2.5 s the reports held their workers.
	backendLate := reportStretch(t, gpath, 2500*time.Millisecond, sc.TimeScale)
	t.Logf("live: the backend ended the constant reports up to %v (model) late", backendLate)
	lateModel := lateMs/sc.TimeScale + float64(backendLate)/float64(time.Millisecond)
	// The trace records when requests reached nginx, so the live run's late
	// sends are in it too, and the replay's latencies count from there
	// while the live run's count from the intended times: the tolerances
	// widen by its measured send lateness. A run so late that nginx and the
	// backend were starved too is no measure of the replay.
	if lateModel > roundTripMaxLate && os.Getenv("CI") != "true" {
		t.Skipf("the live run sent up to %.0f ms (model) late at p99, beyond the %.0f ms its timing comparisons allow: the machine is too busy (CI=true runs them anyway)", lateModel, roundTripMaxLate)
	}
	for _, lg := range res.Groups {
		g := simGroup[lg.Name]
		if g == nil {
			t.Errorf("group %s: nothing replayed", lg.Name)
			continue
		}
		liveShare := float64(lg.Rejected) / float64(lg.Requests)
		simShare := float64(g.rejected) / float64(g.requests)
		if math.Abs(liveShare-simShare) > 0.02 {
			t.Errorf("group %s: rejected share %.3f replayed, live %.3f: want within 0.02", lg.Name, simShare, liveShare)
		}
		slices.Sort(g.lat)
		// A live latency is the server's plus the send's lateness, so its
		// p50 is at most the server's p51 plus the lateness p99, and its
		// p99 at most the server's plus the lateness max; the backend's own
		// lateness adds to both.
		for _, q := range []struct {
			name string
			p    float64
			live float64
			late float64 // model ms
			of   string
		}{{"p50", 0.50, lg.Latency.P50, lateModel, "p99"}, {"p99", 0.99, lg.Latency.P99, lateMaxMs/sc.TimeScale + float64(backendLate)/float64(time.Millisecond), "max"}} {
			v := quantileOf(g.lat, q.p)
			tol := 0.10*q.live + q.late
			if math.Abs(v-q.live) > tol {
				t.Errorf("group %s: %s %.1f ms replayed, live %.1f ms: want within %.1f ms (10%% + the live run's send lateness %s and the backend's, %.1f ms)", lg.Name, q.name, v, q.live, tol, q.of, q.late)
			}
			t.Logf("group %s: %s replayed %.1f ms, live %.1f ms; rejected %.3f, live %.3f", lg.Name, q.name, v, q.live, simShare, liveShare)
		}
	}

	// compare recommends the same limit on both files.
	rec := func(file string, extra ...string) string {
		t.Helper()
		outDir := filepath.Join(dir, "cmp-"+filepath.Base(file))
		args := append([]string{"compare", file, "--engine", "sim", "--no-progress", "--sweep", "proxy.limit_conn.per_key=off,1,2", "-o", outDir}, extra...)
		code, out, errOut := runCLI(t, context.Background(), args...)
		if code != 0 && code != exitSLO {
			t.Fatalf("%s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		c := readJSON[report.Comparison](t, filepath.Join(outDir, "comparison.json"))
		t.Logf("compare %s: %s", filepath.Base(file), c.Recommendation.Reason)
		return strings.Join(c.Recommendation.Value, ",")
	}
	want := rec(origPath)
	if got := rec(impPath, "--set", `slo={others: ["p99 < 1s"]}`); got != want {
		t.Errorf("compare on the imported file recommends per_key=%s, on the original %s", got, want)
	}
}

// roundTripMaxLate bounds, in model ms, the live run's send lateness p99
// under which TestImportRoundTrip compares timings: a fifth of the heavy
// tenant's constant report time.
const roundTripMaxLate = 500.0

// reportStretch returns, in model time, how much longer than service the
// requests of the heavy tenant's constant-time route held their worker in
// the backend's gunicorn log.
func reportStretch(t *testing.T, path string, service time.Duration, scale float64) time.Duration {
	t.Helper()
	f, err := accesslog.CompileGunicorn(accesslog.GunicornWorkerTime)
	if err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	r, err := accesslog.NewReader(path, fh, f)
	if err != nil {
		t.Fatal(err)
	}
	var worst time.Duration
	var e accesslog.Entry
	for r.Next(&e) {
		if string(e.Path) == "/api/method/stock_balance" {
			worst = max(worst, time.Duration(float64(e.RequestTime)/scale)-service)
		}
	}
	return worst
}

// simCollector keeps every result.
type simCollector struct{ results []workload.Result }

func (c *simCollector) Add(r *workload.Result) { c.results = append(c.results, *r) }

// quantileOf returns the q-quantile of sorted values: the least value with
// at least q of them at or below it.
func quantileOf(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
