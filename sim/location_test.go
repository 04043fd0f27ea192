package sim

import (
	"testing"

	"stampede/scenarios"
	"stampede/workload"
)

// TestLocations: each route meets the limits of its path's location; a
// route under no location meets the server's.
func TestLocations(t *testing.T) {
	sc, err := scenarios.Parse("loc.yaml", []byte(`name: loc
duration: 10s
backend:
  workers: 8
  routes:
    - {name: report, path: /api/method/stock_balance, service: 5s}
    - {name: page, path: /app, service: 5s}
    - {name: login, path: /login/x, service: 5s}
proxy:
  limit_conn: {key: $host, per_key: 3}
  locations:
    - {path: /api/method/stock_balance, limit_conn: {key: $host, per_key: 1, status: 429}}
    - {path: /login, limit_req: {key: $host, rate: 1r/m, nodelay: true}}
tenants:
  - {group: r, host: s1, load: {model: closed, users: 3, iterations: 1, routes: {report: 1}}}
  - {group: p, host: s2, load: {model: closed, users: 4, iterations: 1, routes: {page: 1}}}
  - {group: l, host: s3, load: {model: closed, users: 2, iterations: 1, routes: {login: 1}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	var c collector
	mustRun(t, sc, &c, Options{})
	type key struct {
		route  int16
		status int16
	}
	got := map[key]int{}
	for _, r := range c.results {
		if r.Outcome == workload.OK || r.Outcome == workload.Rejected {
			got[key{r.Route, r.Status}]++
		}
	}
	for _, tt := range []struct {
		name string
		k    key
		want int
	}{
		{"report: its location's limit of 1", key{0, 200}, 1},
		{"report: rejected with its status", key{0, 429}, 2},
		{"page: the server's limit of 3", key{1, 200}, 3},
		{"page: rejected by the server's limit", key{1, 503}, 1},
		{"login: the first of s3 under its location's limit_req", key{2, 200}, 1},
		{"login: the second of s3 rejected", key{2, 503}, 1},
	} {
		if got[tt.k] != tt.want {
			t.Errorf("%s: %d, want %d (all: %v)", tt.name, got[tt.k], tt.want, got)
		}
	}
}
