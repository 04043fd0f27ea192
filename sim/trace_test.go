package sim

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"stampede/scenarios"
)

func TestTracePlaysEveryArrival(t *testing.T) {
	dir := t.TempDir()
	sc := `name: replay
duration: 10s
backend:
  workers: 2
  routes:
    - {name: page, path: /page, service: "empirical:p0=1ms,p50=20ms,p100=50ms"}
    - {name: report, path: /report, service: 2s}
tenants:
  - group: heavy
    host: heavy.example.com
    load: {model: trace, start: 1s, routes: {report: 3, page: 1}}
  - group: rest
    hosts: [a.example.com, b.example.com]
    load: {model: trace, routes: {page: 1}}
trace: replay.trace
`
	trace := "t heavy 1\nr report 500000 1000000 1000000\nr page 2500000\nt rest 1\nr page 10 20 30 9000000\nt rest 2\nr page 100\n"
	os.WriteFile(filepath.Join(dir, "replay.yaml"), []byte(sc), 0o644)
	os.WriteFile(filepath.Join(dir, "replay.trace"), []byte(trace), 0o644)
	s, err := scenarios.LoadWith(filepath.Join(dir, "replay.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var c collector
	if _, err := Run(context.Background(), s, &c, Options{}); err != nil {
		t.Fatal(err)
	}
	// heavy's report at 0.5s falls before its start at 1s.
	type key struct {
		tenant int32
		route  int16
	}
	got := map[key]int{}
	for _, r := range c.results {
		got[key{r.Tenant, r.Route}]++
		if r.Tenant == 0 {
		}
	}
	want := map[key]int{{0, 1}: 2, {0, 0}: 1, {1, 0}: 4, {2, 0}: 1}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("tenant %d route %d: %d results, want %d", k.tenant, k.route, got[k], n)
		}
	}
	if len(c.results) != 8 {
		t.Errorf("%d results in all, want 8", len(c.results))
	}
}
