package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"stampede/report"
	"stampede/scenarios"
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
