package sim

import (
	"context"
	"testing"

	"stampede/scenarios"
	"stampede/workload"
)

type outcomeCount [workload.NumOutcomes]int

func (c *outcomeCount) Add(r *workload.Result) { c[r.Outcome]++ }

// TestAddressPool: eight users of one tenant behind limit_conn
// $binary_remote_addr=1. From one address, one request at a time passes;
// from a pool of eight addresses (a user keeps its own), all do. An open
// model's arrivals take the pool's addresses in turn.
func TestAddressPool(t *testing.T) {
	const base = `name: pool
duration: 10s
backend: {workers: 16, routes: [{name: page, path: /, service: 1s}]}
proxy: {limit_conn: {key: $binary_remote_addr, per_key: 1}}
tenants:
  - group: office
    host: erp.example.com
`
	for _, tc := range []struct {
		name         string
		tenant       string
		ok, rejected int
	}{
		{"one address", "    load: {model: closed, users: 8, iterations: 1}\n", 1, 7},
		{"a pool, a user each", "    addrs: 127.1.0.0/29\n    load: {model: closed, users: 8, iterations: 1}\n", 8, 0},
		{"a pool of 4 for 8 users", "    addrs: 127.1.0.0/30\n    load: {model: closed, users: 8, iterations: 1}\n", 4, 4},
		// 10 arrivals a second for 1 s requests: about 10 in flight, from
		// 4 addresses in turn, so 4 at a time pass.
		{"open model", "    addrs: 127.1.0.0/30\n    load: {model: open, arrivals: constant, rate: 10/s, stop: 2s}\n", 8, 12},
	} {
		sc, err := scenarios.Parse("pool.yaml", []byte(base+tc.tenant))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got outcomeCount
		if _, err := Run(context.Background(), sc, &got, Options{}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got[workload.OK] != tc.ok || got[workload.Rejected] != tc.rejected {
			t.Errorf("%s: %d ok, %d rejected; want %d and %d", tc.name, got[workload.OK], got[workload.Rejected], tc.ok, tc.rejected)
		}
	}
}
