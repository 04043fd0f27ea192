package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"stampede/limit"
	"stampede/scenarios"
	"stampede/workerpool"
)

// boundsBase is a good scenario; each case of TestBoundsRefusedAlike puts
// one value past a bound on one of its lines.
var boundsBase = []string{
	"name: bounds",             // 1
	"duration: 1m",             // 2
	"time_scale: 0.01",         // 3
	"backend:",                 // 4
	"  workers: 2",             // 5
	"  threads: 1",             // 6
	"  backlog: 8",             // 7
	"  timeout: 30s",           // 8
	"  boot: 300ms",            // 9
	"  max_requests: 0",        // 10
	"  max_requests_jitter: 0", // 11
	"  routes: [{name: page, path: /, service: 10ms}]", // 12
	"tenants:",                               // 13
	"  - group: sites",                       // 14
	"    count: 2",                           // 15
	`    host: "site{i}.example"`,            // 16
	"    load: {rate: 1/s}",                  // 17
	"proxy:",                                 // 18
	"  limit_conn: {key: $host, per_key: 4}", // 19
	"  limit_req: {key: $host, rate: 10r/s, burst: 20}", // 20
}

// TestBoundsRefusedAlike puts every bound a scenario is held to one step
// past it and checks that validate, run --engine sim and run --engine live
// all refuse the file the same way: exit 2, the file, line and column of
// the value and the field, and no run started (no output directory).
func TestBoundsRefusedAlike(t *testing.T) {
	// past puts one more than bound as backend.key on line n.
	past := func(n int, key string, bound int) map[int]string {
		return map[int]string{n: fmt.Sprintf("  %s: %d", key, bound+1)}
	}
	cases := []struct {
		name  string
		lines map[int]string // 1-based line → its replacement
		want  string         // after "scenario FILE:"
	}{
		{"workers", past(5, "workers", workerpool.MaxWorkers), "5:12: backend.workers: 65537 is over 65536 (want e.g. 8)"},
		{"workers 70000", map[int]string{5: "  workers: 70000"}, "5:12: backend.workers: 70000 is over 65536"},
		{"threads", past(6, "threads", workerpool.MaxThreads), "6:12: backend.threads: 1001 is over 1000 (want e.g. 4)"},
		{"backlog", past(7, "backlog", workerpool.MaxBacklog), "7:12: backend.backlog: 1048577 is over 1048576 (want e.g. 2048)"},
		{"timeout", map[int]string{8: "  timeout: 721h"}, "8:12: backend.timeout: 721h is longer than 720h (want e.g. 120s)"},
		{"boot", map[int]string{9: "  boot: 61m"}, "9:9: backend.boot: 1h1m is longer than 1h (want e.g. 300ms)"},
		{"max_requests", past(10, "max_requests", workerpool.MaxMaxRequests), "10:17: backend.max_requests: 2147483648 is over 2147483647 (want e.g. 5000)"},
		{"max_requests_jitter", past(11, "max_requests_jitter", workerpool.MaxMaxRequests), "11:24: backend.max_requests_jitter: 2147483648 is over 2147483647 (want e.g. 500)"},
		{"duration", map[int]string{2: "duration: 721h"}, "2:11: duration: 721h is longer than 720h"},
		{"time_scale", map[int]string{3: fmt.Sprintf("time_scale: %g", scenarios.MinTimeScale/2)}, "3:13: time_scale: 5e-05 is below 0.0001"},
		{"tenants", map[int]string{15: "    count: 1000001"}, "15:12: tenants[0].count: 1000001 is over 1000000"},
		{"users of a group", map[int]string{17: "    load: {model: closed, users: 100001}"}, "17:34: tenants[0].load.users: 100001 is over 100000"},
		{"users", map[int]string{15: "    count: 20", 17: fmt.Sprintf("    load: {model: closed, users: %d}", scenarios.MaxUsers/20+1)},
			"17:34: tenants[0].load.users: 1000020 closed-model users in all"},
		{"rate", map[int]string{2: "duration: 10s", 17: fmt.Sprintf("    load: {rate: %d/s}", int(scenarios.MaxRate))},
			"17:11: tenants[0].load: 2e+07 requests/s in all at the peak"},
		{"requests", map[int]string{2: "duration: 10m", 17: "    load: {rate: 1000000/s}"},
			"17:11: tenants[0].load: about 1.2e+09 requests expected in all"},
		{"per_key", map[int]string{19: fmt.Sprintf("  limit_conn: {key: $host, per_key: %d}", limit.MaxPerKey+1)},
			"19:37: proxy.limit_conn.per_key: 65536 is over 65535"},
		{"status", map[int]string{19: fmt.Sprintf("  limit_conn: {key: $host, per_key: 4, status: %d}", limit.MaxStatus+1)},
			"19:48: proxy.limit_conn.status: 600 is over 599"},
		{"status below", map[int]string{19: fmt.Sprintf("  limit_conn: {key: $host, per_key: 4, status: %d}", limit.MinStatus-1)},
			"19:48: proxy.limit_conn.status: 399 is below 400"},
		{"zone", map[int]string{19: "  limit_conn: {key: $host, per_key: 4, zone: 1k}"},
			"19:46: proxy.limit_conn.zone: \"1k\" is too small"},
		{"burst", map[int]string{20: fmt.Sprintf("  limit_req: {key: $host, rate: 10r/s, burst: %d}", limit.MaxBurst+1)},
			"20:47: proxy.limit_req.burst: 1000000001 is over 1000000000"},
		{"limit_req rate", map[int]string{20: fmt.Sprintf("  limit_req: {key: $host, rate: %dr/s, burst: 20}", limit.MaxRate+1)},
			`20:33: proxy.limit_req.rate: rate "1000000000001r/s" is too large`},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lines := append([]string(nil), boundsBase...)
			for n, l := range c.lines {
				lines[n-1] = l
			}
			file := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".yaml")
			if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			refusedAlike(t, file, nil, filepath.Join(dir, c.name), "scenario "+file+":"+c.want)
		})
	}
	// The good file runs: the cases fail for their one line alone.
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte(strings.Join(boundsBase, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"validate", good}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("validate of the base file: exit %d, stderr %q; want 0", code, stderr.String())
	}
	// A --set past a bound is refused as the file's value is, naming the
	// override.
	refusedAlike(t, good, []string{"--set", "backend.workers=70000"}, filepath.Join(dir, "set"),
		"scenario "+good+": --set backend.workers=70000: backend.workers: 70000 is over 65536 (want e.g. 8)")
}

// refusedAlike checks that validate, run --engine sim and run --engine live
// of file with the arguments more all exit 2 with want in their error and
// that neither run starts (writes out-sim or out-live).
func refusedAlike(t *testing.T, file string, more []string, out, want string) {
	t.Helper()
	for _, args := range [][]string{
		{"validate", file},
		{"run", file, "--engine", "sim", "--no-progress", "-o", out + "-sim"},
		{"run", file, "--engine", "live", "--no-progress", "-o", out + "-live"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append(args, more...), strings.NewReader(""), &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), want) {
			t.Errorf("%s %s: exit %d, stderr %q; want exit %d and %q", args[0], strings.Join(append(args[2:], more...), " "), code, stderr.String(), exitUsage, want)
		}
		if args[0] == "run" {
			if _, err := os.Stat(args[len(args)-1]); err == nil {
				t.Errorf("%s %s: the output directory %s exists: a run started", args[0], strings.Join(args[2:], " "), args[len(args)-1])
			}
		}
	}
}
