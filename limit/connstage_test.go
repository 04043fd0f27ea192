package limit

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

type connStep struct {
	keys    []string
	verdict Verdict
	rule    int
	hold    bool // keep the slots
}

func runConnSteps(t *testing.T, p *Policy, steps []connStep) []Slots {
	t.Helper()
	var held []Slots
	for i, st := range steps {
		s, d := p.ConnStage(st.keys)
		if d.Verdict != st.verdict || d.Rule != st.rule {
			t.Fatalf("step %d: ConnStage(%q) = %v rule %d, want %v rule %d", i+1, st.keys, d.Verdict, d.Rule, st.verdict, st.rule)
		}
		if d.Verdict == Rejected && d.Status != p.Conn[d.Rule].Spec.Status {
			t.Fatalf("step %d: status %d, want %d", i+1, d.Status, p.Conn[d.Rule].Spec.Status)
		}
		if d.Verdict == Rejected && s.Len() != 0 {
			t.Fatalf("step %d: %v holds %d slots, want none", i+1, d.Verdict, s.Len())
		}
		if st.hold {
			held = append(held, s)
		} else {
			s.Release()
		}
	}
	return held
}

func inFlight(p *Policy, rule int, key string) int { return p.Conn[rule].Limiter.InFlight(key) }

func TestConnStageReleasesOnPartialFailure(t *testing.T) {
	p := mustPolicy(t, Config{Conn: []ConnSpec{
		{Key: "$host", PerKey: 2},
		{Key: "$binary_remote_addr", PerKey: 1, Status: 429},
	}})
	held := runConnSteps(t, p, []connStep{
		{[]string{"s1", "ip1"}, Passed, -1, true},
		{[]string{"s1", "ip1"}, Rejected, 1, false}, // the host slot taken is given back
		{[]string{"s1", "ip2"}, Passed, -1, true},
		{[]string{"s1", "ip3"}, Rejected, 0, false}, // ip3 is not counted at all
		{[]string{"s2", "ip1"}, Rejected, 1, false},
	})
	for _, c := range []struct {
		rule int
		key  string
		want int
	}{{0, "s1", 2}, {0, "s2", 0}, {1, "ip1", 1}, {1, "ip2", 1}, {1, "ip3", 0}} {
		if got := inFlight(p, c.rule, c.key); got != c.want {
			t.Errorf("limit_conn[%d] InFlight(%s) = %d, want %d", c.rule, c.key, got, c.want)
		}
	}
	if got := fmt.Sprint(p.Busiest(2)); got != "[{s1 2}]" {
		t.Errorf("Busiest = %s, want [{s1 2}]", got)
	}
	for i := range held {
		held[i].Release()
		held[i].Release()
	}
	for r := range p.Conn {
		if l := p.Conn[r].Limiter; l.Len() != 0 || l.ZoneBytes() != 0 {
			t.Errorf("limit_conn[%d] after release: Len %d ZoneBytes %d, want 0 0", r, l.Len(), l.ZoneBytes())
		}
	}
}

func TestConnStageSkipped(t *testing.T) {
	p := mustPolicy(t, Config{Conn: []ConnSpec{{Key: "$host", PerKey: 1}, {Key: "$http_x_tenant", PerKey: 1}}})
	long := strings.Repeat("h", MaxConnKey+1)
	held := runConnSteps(t, p, []connStep{
		{[]string{"", ""}, Skipped, -1, true},
		{[]string{long, ""}, Skipped, -1, true},
		{nil, Skipped, -1, true},
		{[]string{"", "t1"}, Passed, -1, true},
		{[]string{"", "t1"}, Rejected, 1, false},
		{[]string{long, "t2"}, Passed, -1, true},
	})
	if inFlight(p, 1, "t1") != 1 || p.Conn[0].Limiter.Len() != 0 {
		t.Errorf("InFlight(t1) = %d, host zone %d keys; want 1 and 0", inFlight(p, 1, "t1"), p.Conn[0].Limiter.Len())
	}
	for i := range held {
		held[i].Release()
	}
}

func TestConnStageDryRun(t *testing.T) {
	tests := []struct {
		name  string
		conn  []ConnSpec
		steps []connStep
		// After the steps: the requests in flight under limit i for
		// key[i], and the slots the second request holds.
		key         [2]string
		want        [2]int
		secondHolds int
	}{
		// Every limit in dry run, as nginx's limit_conn_dry_run on: over
		// the first, the request goes on holding nothing and the second
		// limit is not consulted.
		{"all dry run", []ConnSpec{{Key: "$host", PerKey: 1, DryRun: true}, {Key: "$remote_addr", PerKey: 1, DryRun: true}}, []connStep{
			{[]string{"k", "a"}, Passed, -1, true},
			{[]string{"k", "b"}, RejectedDryRun, 0, true},
			{[]string{"k", "b"}, RejectedDryRun, 0, true},
		}, [2]string{"k", "b"}, [2]int{1, 0}, 0},
		// A dry-run limit before an enforced one never switches it off:
		// the enforced limit decides as if the dry-run one were not
		// there, and the dry-run limit sees what it admitted.
		{"dry run first", []ConnSpec{{Key: "$host", PerKey: 1, DryRun: true}, {Key: "$remote_addr", PerKey: 1}}, []connStep{
			{[]string{"k", "a"}, Passed, -1, true},
			{[]string{"k", "b"}, RejectedDryRun, 0, true},
			{[]string{"k", "b"}, Rejected, 1, false},
		}, [2]string{"k", "b"}, [2]int{1, 1}, 1},
		// The second limit in dry run: the slot the first took is kept.
		{"dry run second", []ConnSpec{{Key: "$host", PerKey: 2}, {Key: "$remote_addr", PerKey: 1, DryRun: true}}, []connStep{
			{[]string{"k", "a"}, Passed, -1, true},
			{[]string{"k", "a"}, RejectedDryRun, 1, true},
			{[]string{"k", "a"}, Rejected, 0, false},
		}, [2]string{"k", "a"}, [2]int{2, 1}, 1},
	}
	for _, tt := range tests {
		p := mustPolicy(t, Config{Conn: tt.conn})
		held := runConnSteps(t, p, tt.steps)
		counts := func() [2]int { return [2]int{inFlight(p, 0, tt.key[0]), inFlight(p, 1, tt.key[1])} }
		if got := counts(); got != tt.want || held[1].Len() != tt.secondHolds {
			t.Errorf("%s: InFlight(%s), InFlight(%s) = %v, the second request holds %d; want %v and %d",
				tt.name, tt.key[0], tt.key[1], got, held[1].Len(), tt.want, tt.secondHolds)
		}
		for i := range held {
			held[i].Release()
		}
		if got := counts(); got != [2]int{} {
			t.Errorf("%s: after release: InFlight(%s), InFlight(%s) = %v, want [0 0]", tt.name, tt.key[0], tt.key[1], got)
		}
	}
}

func TestConnStageManySlots(t *testing.T) {
	var specs []ConnSpec
	for i := 0; i < 7; i++ {
		specs = append(specs, ConnSpec{Key: fmt.Sprintf("$http_x_%d", i), PerKey: 1})
	}
	p := mustPolicy(t, Config{Conn: specs})
	keys := []string{"a", "b", "c", "d", "e", "f", "g"}
	s, d := p.ConnStage(keys)
	if d.Verdict != Passed || s.Len() != 7 {
		t.Fatalf("ConnStage = %v with %d slots, want Passed with 7", d.Verdict, s.Len())
	}
	if _, d := p.ConnStage([]string{"x", "x", "x", "x", "x", "x", "g"}); d.Verdict != Rejected || d.Rule != 6 {
		t.Fatalf("ConnStage over the 7th limit = %v rule %d, want Rejected rule 6", d.Verdict, d.Rule)
	}
	s.Release()
	s.Release()
	for i, r := range p.Conn {
		if r.Limiter.Len() != 0 {
			t.Fatalf("limit_conn[%d] has %d keys after release, want 0", i, r.Limiter.Len())
		}
	}
}

// TestConnStageConcurrent runs many requests through two limits at once,
// releasing in random order, and checks every count comes back to zero.
func TestConnStageConcurrent(t *testing.T) {
	p := mustPolicy(t, Config{Conn: []ConnSpec{{Key: "$host", PerKey: 3}, {Key: "$binary_remote_addr", PerKey: 2, Zone: "32k"}}})
	var passed, rejected sync.Map
	runConcurrently(16, 5, func(g int, rng *rand.Rand) {
		var mine []Slots
		for i := 0; i < 1500; i++ {
			keys := []string{fmt.Sprintf("site%d", rng.IntN(5)), fmt.Sprintf("ip%d", rng.IntN(500))}
			s, d := p.ConnStage(keys)
			if d.Verdict == Passed {
				mine = append(mine, s)
				passed.Store(g, true)
			} else {
				rejected.Store(g, true)
			}
			for len(mine) > 0 && rng.IntN(3) != 0 {
				j := rng.IntN(len(mine))
				mine[j].Release()
				mine = append(mine[:j], mine[j+1:]...)
			}
		}
		for i := range mine {
			mine[i].Release()
		}
	})
	for i, r := range p.Conn {
		if r.Limiter.Len() != 0 || r.Limiter.ZoneBytes() != 0 {
			t.Errorf("limit_conn[%d]: %d keys, %d bytes after the run; want 0 0", i, r.Limiter.Len(), r.Limiter.ZoneBytes())
		}
	}
	if _, ok := passed.Load(0); !ok {
		t.Errorf("goroutine 0 never passed")
	}
}

func BenchmarkPolicyConnStageParallel(b *testing.B) {
	p := mustPolicy(b, Config{Conn: []ConnSpec{{Key: "$host", PerKey: 4}, {Key: "$binary_remote_addr", PerKey: 4}}})
	hosts, addrs := benchKeys(1000), benchKeys(10000)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(rand.Uint64(), 6))
		keys := make([]string, 2)
		for pb.Next() {
			keys[0], keys[1] = hosts[rng.IntN(len(hosts))], addrs[rng.IntN(len(addrs))]
			s, _ := p.ConnStage(keys)
			s.Release()
		}
	})
}

// TestConnStageDoesNotAllocate checks the path every request takes.
func TestConnStageDoesNotAllocate(t *testing.T) {
	p := mustPolicy(t, Config{Conn: []ConnSpec{{Key: "$host", PerKey: 4}, {Key: "$binary_remote_addr", PerKey: 4}}})
	keys := []string{"site1.example.com", "\x7f\x00\x00\x01"}
	if n := testing.AllocsPerRun(1000, func() {
		s, _ := p.ConnStage(keys)
		s.Release()
	}); n != 0 {
		t.Errorf("ConnStage and Release: %v allocations, want 0", n)
	}
}

func BenchmarkConnStage(b *testing.B) {
	p := mustPolicy(b, Config{Conn: []ConnSpec{{Key: "$host", PerKey: 4}}})
	keys := []string{"site1.example.com"}
	b.ReportAllocs()
	for b.Loop() {
		s, _ := p.ConnStage(keys)
		s.Release()
	}
}
