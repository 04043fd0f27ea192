package main

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"stampede/internal/nginxtest"
	"stampede/report"
)

// shardNginxScenario has a tenant heavy enough to be cut in two (busy: 3
// users of 40 requests each, done well before the end, half the limit), one
// that the limit splits 6/6 however its users are placed (noisy: 12 tabs of
// a long report at once against limit_conn 6), and light open-model
// tenants whose arrivals each shard draws from the tenant's own stream, so
// that the counts of a sharded run and a whole one can be held equal
// exactly. The limit leaves the light tenants room: on a loaded machine a
// shard that has finished renders its charts while the others still send,
// and the target itself stalls; nginx would reject a light tenant only if 7
// of its requests piled up, 23 s of model time at its rate (4.7 s of wall
// time). At 1.25/s it took 1.1 s of wall time, and a busy machine did it.
const shardNginxScenario = `name: shard-nginx
duration: 10s
time_scale: 0.2
seed: 3
backend:
  workers: 16
  routes:
    - {name: page, path: /app, service: 10ms}
    - {name: report, path: /report, service: 5s}
proxy:
  limit_conn: {key: $host, per_key: 6}
tenants:
  - {group: quiet, count: 24, host: "q{i}.example.com", load: {rate: 0.3/s, routes: {page: 1}}}
  - {group: busy, host: busy.example.com, load: {model: closed, users: 3, think: 100ms, iterations: 40, routes: {page: 1}}}
  - {group: noisy, host: x.example.com, load: {model: closed, users: 12, start: 1s, iterations: 1, routes: {report: 1}}}
`

// TestShardsThroughNginx plays a --target run through real nginx
// (stampede nginx-config in front of stampede backend) whole, then as 3
// shards started at one --start-at and merged by stampede report: the
// merged results have every tenant's requests of the whole run, and each
// group's rejected share within 0.02 of it.
func TestShardsThroughNginx(t *testing.T) {
	nginxtest.Require(t)
	sc := writeScenario(t, shardNginxScenario)
	ctx := t.Context()

	// stampede backend --scenario, on a port of its choosing.
	upstream := startCLI(t, regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`), "backend", "--scenario", sc, "--listen", "127.0.0.1:0")[1]
	// stampede nginx-config, for the scenario's time scale.
	target := nginxtest.Start(t, func(w io.Writer, listen string) error {
		code, conf, stderr := runCLI(t, ctx, "nginx-config", sc, "--listen", listen, "--upstream", upstream, "--time-scale", "0.2")
		if code != 0 {
			return fmt.Errorf("nginx-config: exit %d: %s", code, stderr)
		}
		_, err := io.WriteString(w, conf)
		return err
	})

	wholeDir := t.TempDir()
	if code, _, stderr := runCLI(t, ctx, "run", sc, "--target", target, "-o", wholeDir, "--no-progress"); code != exitOK {
		t.Fatalf("whole run: exit %d: %s", code, stderr)
	}
	whole, err := report.ReadResults(filepath.Join(wholeDir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	base := t.TempDir()
	var wg sync.WaitGroup
	codes := make([]int, 3)
	errs := make([]string, 3)
	inputs := make([]string, 3)
	for i := range 3 {
		dir := filepath.Join(base, fmt.Sprintf("shard-%d", i))
		inputs[i] = filepath.Join(dir, "results.json")
		wg.Go(func() {
			codes[i], _, errs[i] = runCLI(t, ctx, "run", sc, "--target", target, "--shard", fmt.Sprintf("%d/3", i), "--start-at", start, "-o", dir, "--no-progress")
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != exitOK {
			t.Fatalf("shard %d/3: exit %d: %s", i, c, errs[i])
		}
	}
	mergedDir := t.TempDir()
	if code, _, stderr := runCLI(t, ctx, append(append([]string{"report"}, inputs...), "-o", mergedDir)...); code == exitInconclusive {
		// The merged run is conclusive only if every shard was; a busy
		// machine makes it inconclusive, which decides nothing here.
		t.Skipf("the shards were inconclusive on this machine: %s", stderr)
	} else if code != exitOK {
		t.Fatalf("report of the shards: exit %d: %s", code, stderr)
	}
	merged, err := report.ReadResults(filepath.Join(mergedDir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if merged.Shards != 3 || merged.RunID == "" {
		t.Errorf("merged: %d shards, run id %q; want 3 and the shards' id", merged.Shards, merged.RunID)
	}
	pieces := 0
	for _, in := range inputs {
		r, err := report.ReadResults(in)
		if err != nil {
			t.Fatal(err)
		}
		pieces += len(r.Tenants)
	}
	if pieces <= len(whole.Tenants) {
		t.Errorf("the shards played %d tenants and pieces, the whole run %d tenants: busy was not cut", pieces, len(whole.Tenants))
	}

	byName := map[string]report.TenantResult{}
	for _, tn := range merged.Tenants {
		byName[tn.Name] = tn
	}
	if len(merged.Tenants) != len(whole.Tenants) {
		t.Errorf("merged: %d tenants, whole: %d", len(merged.Tenants), len(whole.Tenants))
	}
	for _, w := range whole.Tenants {
		m, ok := byName[w.Name]
		if !ok || m.Requests != w.Requests {
			t.Errorf("tenant %s: %d requests merged from the shards, %d in the whole run", w.Name, m.Requests, w.Requests)
		}
	}
	for _, w := range whole.Groups {
		m := merged.Group(w.Name)
		if m == nil {
			t.Errorf("group %s: not in the merged results", w.Name)
			continue
		}
		share := func(g *report.GroupResult) float64 { return float64(g.Rejected) / math.Max(1, float64(g.Requests)) }
		if d := math.Abs(share(m) - share(&w)); d > 0.02 {
			t.Errorf("group %s: rejected share %.3f merged, %.3f whole; want within 0.02", w.Name, share(m), share(&w))
		}
		t.Logf("group %s: whole %d requests, %d rejected; shards %d, %d", w.Name, w.Requests, w.Rejected, m.Requests, m.Rejected)
	}
	if x := whole.Group("noisy"); x == nil || x.Rejected != 6 {
		t.Errorf("whole run: noisy %+v; want 6 of its 12 tabs rejected by limit_conn 6", x)
	}
}
