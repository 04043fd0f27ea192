package scenarios

import (
	"math"
	"reflect"
	"slices"
	"testing"
)

// checkPlan holds a plan to PlanShards' promises: every tenant in it once
// whole or as pieces 0..Of-1 on distinct shards, users and loads summing to
// the tenant's, and the heaviest shard within one piece of the lightest.
func checkPlan(t *testing.T, name string, loads []ShardLoad, n int, plan [][]Piece) {
	t.Helper()
	if len(plan) != n {
		t.Fatalf("%s: %d shards, want %d", name, len(plan), n)
	}
	seen := map[int][]Piece{}
	shardOf := map[[2]int]int{}
	var biggest float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for s, sh := range plan {
		sum := 0.0
		for _, p := range sh {
			if k := [2]int{p.Tenant, p.J}; true {
				if prev, dup := shardOf[k]; dup {
					t.Errorf("%s: tenant %d piece %d in shards %d and %d", name, p.Tenant, p.J, prev, s)
				}
				shardOf[k] = s
			}
			seen[p.Tenant] = append(seen[p.Tenant], p)
			sum += p.Load
			biggest = max(biggest, p.Load)
		}
		lo, hi = min(lo, sum), max(hi, sum)
	}
	for i, l := range loads {
		ps := seen[i]
		if len(ps) == 0 {
			t.Errorf("%s: tenant %d is in no shard", name, i)
			continue
		}
		of := ps[0].Of
		if len(ps) != of {
			t.Errorf("%s: tenant %d: %d pieces, want its Of %d", name, i, len(ps), of)
		}
		shards := map[int]bool{}
		users, load := 0, 0.0
		for _, p := range ps {
			shards[shardOf[[2]int{p.Tenant, p.J}]] = true
			users += p.Users
			load += p.Load
		}
		if len(shards) != of {
			t.Errorf("%s: tenant %d: %d pieces on %d shards, want each on its own", name, i, of, len(shards))
		}
		if l.Users > 0 && users != l.Users {
			t.Errorf("%s: tenant %d: pieces play %d users, want %d", name, i, users, l.Users)
		}
		if math.Abs(load-l.Load) > 1e-9*max(1, l.Load) {
			t.Errorf("%s: tenant %d: pieces weigh %g, want %g", name, i, load, l.Load)
		}
	}
	if hi-lo > biggest+1e-9 {
		t.Errorf("%s: shard loads from %g to %g: apart by more than the largest piece %g", name, lo, hi, biggest)
	}
}

func TestPlanShards(t *testing.T) {
	ones := func(n int) []ShardLoad {
		out := make([]ShardLoad, n)
		for i := range out {
			out[i] = ShardLoad{Load: 1, Users: 1}
		}
		return out
	}
	tests := []struct {
		name   string
		loads  []ShardLoad
		n      int
		pieces []int // want, per tenant, its number of pieces
		counts []int // want, per shard, its number of pieces (nil: not checked)
	}{
		{name: "six equal tenants over three", loads: ones(6), n: 3, pieces: []int{1, 1, 1, 1, 1, 1}, counts: []int{2, 2, 2}},
		{name: "one shard", loads: ones(4), n: 1, pieces: []int{1, 1, 1, 1}, counts: []int{4}},
		{name: "more shards than tenants", loads: ones(2), n: 4, pieces: []int{1, 1}, counts: []int{1, 1, 0, 0}},
		{name: "uneven tenants", loads: []ShardLoad{{Load: 5}, {Load: 4}, {Load: 3}, {Load: 3}, {Load: 2}, {Load: 1}}, n: 3, pieces: []int{1, 1, 1, 1, 1, 1}},
		{name: "a heavy closed tenant cut by its users", loads: []ShardLoad{{Load: 10, Users: 10}, {Load: 1, Users: 1}, {Load: 1, Users: 1}, {Load: 1, Users: 1}, {Load: 1, Users: 1}, {Load: 1, Users: 1}}, n: 3, pieces: []int{2, 1, 1, 1, 1, 1}, counts: []int{1, 1, 5}},
		{name: "a heavy open tenant cut by its arrivals", loads: []ShardLoad{{Load: 1}, {Load: 100}, {Load: 1}}, n: 4, pieces: []int{1, 4, 1}},
		{name: "a heavy tenant of two users", loads: []ShardLoad{{Load: 50, Users: 2}, {Load: 1, Users: 1}}, n: 5, pieces: []int{2, 1}},
		{name: "no load at all", loads: []ShardLoad{{}, {}, {}}, n: 2, pieces: []int{1, 1, 1}, counts: []int{2, 1}},
		{name: "the incident: one noisy site among quiet ones", loads: append([]ShardLoad{{Load: 8, Users: 8}}, ones(249)...), n: 3, pieces: slices.Concat([]int{1}, slices.Repeat([]int{1}, 249))},
	}
	for _, tt := range tests {
		plan := PlanShards(tt.loads, tt.n)
		checkPlan(t, tt.name, tt.loads, tt.n, plan)
		got := make([]int, len(tt.loads))
		for _, sh := range plan {
			for _, p := range sh {
				got[p.Tenant]++
			}
		}
		if !slices.Equal(got, tt.pieces) {
			t.Errorf("%s: pieces per tenant = %v, want %v", tt.name, got, tt.pieces)
		}
		if tt.counts != nil {
			var counts []int
			for _, sh := range plan {
				counts = append(counts, len(sh))
			}
			if !slices.Equal(counts, tt.counts) {
				t.Errorf("%s: pieces per shard = %v, want %v", tt.name, counts, tt.counts)
			}
		}
		if again := PlanShards(tt.loads, tt.n); !reflect.DeepEqual(again, plan) {
			t.Errorf("%s: a second plan differs from the first:\n%v\n%v", tt.name, again, plan)
		}
	}
}

func TestScenarioShard(t *testing.T) {
	src := `name: shards
duration: 10s
backend: {workers: 4, routes: [{name: page, path: /, service: 10ms}]}
tenants:
  - {group: noisy, host: noisy.example, load: {model: closed, users: 12, think: 0s}}
  - {group: quiet, count: 9, host: "q{i}.example", load: {rate: 2/s, stop: 5s}}
`
	sc, err := Parse("shards.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	whole := sc.Expand()
	type key struct{ name, host string }
	users := map[key]int{}
	indexes := map[int]bool{}
	for i := range 3 {
		sh, err := sc.Shard(i, 3)
		if err != nil {
			t.Fatalf("Shard(%d, 3): %v", i, err)
		}
		if got := sh.ShardOf(); got != (ShardOf{i, 3}) {
			t.Errorf("Shard(%d, 3).ShardOf() = %v", i, got)
		}
		for _, tn := range sh.Expand() {
			if indexes[tn.Index] {
				t.Errorf("shard %d: tenant %s has Index %d, which another shard's tenant has", i, tn.Name, tn.Index)
			}
			indexes[tn.Index] = true
			if tn.Index < len(whole) && whole[tn.Index].Name != tn.Name {
				t.Errorf("shard %d: Index %d is %s, the whole run's is %s", i, tn.Index, tn.Name, whole[tn.Index].Name)
			}
			users[key{tn.Name, tn.Host}] += max(tn.Load.Users, 1)
		}
	}
	if len(users) != len(whole) {
		t.Errorf("the shards play %d tenants, the whole run %d", len(users), len(whole))
	}
	for _, tn := range whole {
		want := max(tn.Load.Users, 1)
		if got := users[key{tn.Name, tn.Host}]; got != want {
			t.Errorf("tenant %s: the shards play %d users, want %d", tn.Name, got, want)
		}
	}
	if got := users[key{"noisy", "noisy.example"}]; got != 12 {
		t.Errorf("noisy: %d users in all", got)
	}
	if len(indexes) <= len(whole) {
		t.Errorf("%d tenants and pieces in all: the noisy tenant was not cut", len(indexes))
	}
	for _, bad := range [][2]int{{3, 3}, {-1, 3}, {0, 0}, {0, MaxShards + 1}} {
		if _, err := sc.Shard(bad[0], bad[1]); err == nil {
			t.Errorf("Shard(%d, %d): no error", bad[0], bad[1])
		}
	}
}
