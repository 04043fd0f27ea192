package sim

import (
	"context"
	"testing"

	"stampede/scenarios"
)

func TestTracePlaysEveryArrival(t *testing.T) {
	s, err := scenarios.LoadWith("testdata/replay.yaml", nil)
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
