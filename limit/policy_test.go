package limit

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

func mustPolicy(t testing.TB, cfg Config) *Policy {
	t.Helper()
	p, err := NewPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNewPolicyErrors(t *testing.T) {
	okConn := ConnSpec{Key: "$host", PerKey: 4}
	okReq := ReqSpec{Key: "$host", Rate: "10r/s"}
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Conn: []ConnSpec{{Key: "$host", PerKey: 0}}}, "limit_conn[0].per_key: 0"},
		{Config{Conn: []ConnSpec{okConn, {Key: "$host", PerKey: -1}}}, "limit_conn[1].per_key: -1"},
		{Config{Conn: []ConnSpec{{Key: "$host", PerKey: 65536}}}, "limit_conn[0].per_key"},
		{Config{Conn: []ConnSpec{{Key: "$nope", PerKey: 1}}}, `limit_conn[0].key: key "$nope": unknown variable "$nope"`},
		{Config{Conn: []ConnSpec{{Key: "", PerKey: 1}}}, "limit_conn[0].key: empty key"},
		{Config{Conn: []ConnSpec{{Key: "$host", PerKey: 1, Status: 302}}}, "limit_conn[0].status: 302"},
		{Config{Conn: []ConnSpec{{Key: "$host", PerKey: 1, Status: 600}}}, "want 400 to 599"},
		{Config{Conn: []ConnSpec{{Key: "$host", PerKey: 1, Zone: "10x"}}}, `limit_conn[0].zone: "10x" is not a size`},
		{Config{Conn: []ConnSpec{{Key: "$host", PerKey: 1, Zone: "16k"}}}, `limit_conn[0].zone: "16k" is too small`},
		{Config{Req: []ReqSpec{okReq, {Key: "$host", Rate: "fast"}}}, `limit_req[1].rate: "fast" is not a rate`},
		{Config{Req: []ReqSpec{{Key: "$host", Rate: "0r/s"}}}, `limit_req[0].rate`},
		{Config{Req: []ReqSpec{{Key: "$host", Rate: "1r/s", Burst: -1}}}, "limit_req[0].burst: -1"},
		{Config{Req: []ReqSpec{{Key: "$host", Rate: "1r/s", Delay: -2}}}, "limit_req[0].delay: -2"},
		{Config{Req: []ReqSpec{{Key: "$host", Rate: "1r/s", Status: 399}}}, "limit_req[0].status: 399"},
		{Config{Req: []ReqSpec{{Key: "$x y", Rate: "1r/s"}}}, "limit_req[0].key"},
		{Config{Req: []ReqSpec{{Key: "$host", Rate: "1r/s", Zone: "1g"}}}, "limit_req[0].zone"},
	}
	for i, tt := range tests {
		_, err := NewPolicy(tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("case %d: NewPolicy error = %v, want one containing %q", i, err, tt.want)
		}
	}
}

func TestNewPolicyDefaults(t *testing.T) {
	p := mustPolicy(t, Config{
		Conn: []ConnSpec{{Key: "host", PerKey: 4}, {Key: "$binary_remote_addr", PerKey: 2, Status: 429, Zone: "1m"}},
		Req:  []ReqSpec{{Key: "binary_remote_addr", Rate: "30r/m", Burst: 5}},
	})
	c := p.Conn[0].Spec
	if c.Key != "$host" || c.Status != 503 || c.Zone != "10m" {
		t.Errorf("limit_conn[0] compiled to %+v, want key $host, status 503, zone 10m", c)
	}
	if c := p.Conn[1].Spec; c.Status != 429 || c.Zone != "1m" {
		t.Errorf("limit_conn[1] compiled to %+v, want status 429 zone 1m", c)
	}
	if r := p.Req[0]; r.Spec.Key != "$binary_remote_addr" || r.Spec.Status != 503 || r.Limiter.Rate() != 500 {
		t.Errorf("limit_req[0] compiled to %+v rate %d, want key $binary_remote_addr, status 503, rate 500", r.Spec, r.Limiter.Rate())
	}
	if got := p.Busiest(5); got == nil || len(got) != 0 {
		t.Errorf("Busiest with no requests = %#v, want empty", got)
	}
	if got := (&Policy{}).Busiest(5); got != nil {
		t.Errorf("Busiest without limit_conn = %v, want nil", got)
	}
}

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
	// Every limit in dry run, as nginx's limit_conn_dry_run on: over the
	// first, the request goes on holding nothing and the second limit is
	// not consulted.
	p := mustPolicy(t, Config{Conn: []ConnSpec{{Key: "$host", PerKey: 1, DryRun: true}, {Key: "$remote_addr", PerKey: 1, DryRun: true}}})
	held := runConnSteps(t, p, []connStep{
		{[]string{"k", "a"}, Passed, -1, true},
		{[]string{"k", "b"}, RejectedDryRun, 0, true},
		{[]string{"k", "b"}, RejectedDryRun, 0, true},
	})
	if inFlight(p, 0, "k") != 1 || inFlight(p, 1, "b") != 0 || held[1].Len() != 0 {
		t.Errorf("all dry run: InFlight(k) = %d, InFlight(b) = %d, the rejected request holds %d; want 1, 0 and 0", inFlight(p, 0, "k"), inFlight(p, 1, "b"), held[1].Len())
	}
	for i := range held {
		held[i].Release()
	}

	// A dry-run limit before an enforced one never switches it off: the
	// enforced limit decides as if the dry-run one were not there, and the
	// dry-run limit sees what it admitted.
	p = mustPolicy(t, Config{Conn: []ConnSpec{{Key: "$host", PerKey: 1, DryRun: true}, {Key: "$remote_addr", PerKey: 1}}})
	held = runConnSteps(t, p, []connStep{
		{[]string{"k", "a"}, Passed, -1, true},
		{[]string{"k", "b"}, RejectedDryRun, 0, true},
		{[]string{"k", "b"}, Rejected, 1, false},
	})
	if inFlight(p, 0, "k") != 1 || inFlight(p, 1, "b") != 1 || held[1].Len() != 1 {
		t.Errorf("dry run first: InFlight(k) = %d, InFlight(b) = %d, the dry-run rejected request holds %d; want 1, 1 and 1", inFlight(p, 0, "k"), inFlight(p, 1, "b"), held[1].Len())
	}
	for i := range held {
		held[i].Release()
	}

	// The second limit in dry run: the slot the first took is kept.
	p = mustPolicy(t, Config{Conn: []ConnSpec{{Key: "$host", PerKey: 2}, {Key: "$remote_addr", PerKey: 1, DryRun: true}}})
	held = runConnSteps(t, p, []connStep{
		{[]string{"k", "a"}, Passed, -1, true},
		{[]string{"k", "a"}, RejectedDryRun, 1, true},
		{[]string{"k", "a"}, Rejected, 0, false},
	})
	if inFlight(p, 0, "k") != 2 || inFlight(p, 1, "a") != 1 {
		t.Errorf("after a dry-run reject by the second limit: InFlight(k) = %d, InFlight(a) = %d, want 2 and 1", inFlight(p, 0, "k"), inFlight(p, 1, "a"))
	}
	for i := range held {
		held[i].Release()
	}
	if inFlight(p, 0, "k") != 0 || inFlight(p, 1, "a") != 0 {
		t.Errorf("after release: counts %d %d, want 0 0", inFlight(p, 0, "k"), inFlight(p, 1, "a"))
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
	var wg sync.WaitGroup
	var passed, rejected sync.Map
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 5))
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
		}(g)
	}
	wg.Wait()
	for i, r := range p.Conn {
		if r.Limiter.Len() != 0 || r.Limiter.ZoneBytes() != 0 {
			t.Errorf("limit_conn[%d]: %d keys, %d bytes after the run; want 0 0", i, r.Limiter.Len(), r.Limiter.ZoneBytes())
		}
	}
	if _, ok := passed.Load(0); !ok {
		t.Errorf("goroutine 0 never passed")
	}
}

type reqStageStep struct {
	at      int
	keys    []string
	verdict Verdict
	delay   time.Duration
	rule    int
}

func runReqStage(t *testing.T, p *Policy, steps []reqStageStep) {
	t.Helper()
	for i, st := range steps {
		d := p.ReqStage(ms(st.at), st.keys)
		if d.Verdict != st.verdict || d.Delay != st.delay || d.Rule != st.rule {
			t.Fatalf("step %d: ReqStage(t0+%dms, %q) = %v %v rule %d, want %v %v rule %d", i+1, st.at, st.keys, d.Verdict, d.Delay, d.Rule, st.verdict, st.delay, st.rule)
		}
		if d.Verdict == Rejected || d.Verdict == RejectedDryRun {
			if d.Status != p.Req[d.Rule].Spec.Status {
				t.Fatalf("step %d: status %d, want %d", i+1, d.Status, p.Req[d.Rule].Spec.Status)
			}
		}
	}
}

func excessOf(t *testing.T, p *Policy, rule int, key string) int64 {
	t.Helper()
	ex, _, ok := p.Req[rule].Limiter.State(key)
	if !ok {
		t.Fatalf("limit_req[%d] has no key %q", rule, key)
	}
	return ex
}

func TestReqStageWorkedExamples(t *testing.T) {
	p := mustPolicy(t, Config{Req: []ReqSpec{{Key: "$host", Rate: "1r/s", Burst: 5, NoDelay: true}}})
	var steps []reqStageStep
	for i := 0; i < 6; i++ {
		steps = append(steps, reqStageStep{0, []string{"site1"}, Passed, 0, -1})
	}
	steps = append(steps, reqStageStep{0, []string{"site1"}, Rejected, 0, 0})
	runReqStage(t, p, steps)

	p = mustPolicy(t, Config{Req: []ReqSpec{{Key: "$host", Rate: "5r/s", Burst: 12, Delay: 8, Status: 429}}})
	steps = nil
	for i := 0; i < 9; i++ {
		steps = append(steps, reqStageStep{0, []string{"site1"}, Passed, 0, -1})
	}
	for _, d := range []time.Duration{200, 400, 600, 800} {
		steps = append(steps, reqStageStep{0, []string{"site1"}, Delayed, d * time.Millisecond, 0})
	}
	steps = append(steps, reqStageStep{0, []string{"site1"}, Rejected, 0, 0})
	runReqStage(t, p, steps)
}

// TestReqStageTwoLimits follows nginx through two limit_req: the first is
// only checked while the second is checked and charged, then the first is
// charged and the longer delay wins; when the second rejects, the first is
// not charged.
func TestReqStageTwoLimits(t *testing.T) {
	p := mustPolicy(t, Config{Req: []ReqSpec{
		{Key: "$host", Rate: "1r/s", Burst: 10},
		{Key: "$binary_remote_addr", Rate: "2r/s", Burst: 2, Status: 429},
	}})
	k := []string{"a", "b"}
	runReqStage(t, p, []reqStageStep{
		{0, k, Passed, 0, -1},
		{0, k, Delayed, 1000 * time.Millisecond, 0}, // a: 1000 → 1 s; b: 1000 → 500 ms
		{0, k, Delayed, 2000 * time.Millisecond, 0}, // a: 2000 → 2 s; b: 2000 → 1 s
		{0, k, Rejected, 0, 1},                      // b: 3000 > 2000
	})
	if a, b := excessOf(t, p, 0, "a"), excessOf(t, p, 1, "b"); a != 2000 || b != 2000 {
		t.Fatalf("after the reject: excess a %d b %d, want 2000 2000 (nothing charged)", a, b)
	}
	runReqStage(t, p, []reqStageStep{
		{1000, k, Delayed, 2000 * time.Millisecond, 0}, // a: 2000 − 1000 + 1000; b: 2000 − 2000 + 1000 → 500 ms
		{1000, []string{"a", "c"}, Delayed, 3000 * time.Millisecond, 0},
		{1000, []string{"z", "b"}, Delayed, 1000 * time.Millisecond, 1}, // b: 2000 → 1 s; z: new
		{1000, []string{"a", "b"}, Rejected, 0, 1},
	})
	if a := excessOf(t, p, 0, "a"); a != 3000 {
		t.Fatalf("excess a = %d, want 3000", a)
	}
	// Every entry was let go: all are expirable.
	for i, r := range p.Req {
		for j := range r.Limiter.shards {
			sh := &r.Limiter.shards[j]
			for e := sh.lru.next; e != &sh.lru; e = e.next {
				if e.count != 0 {
					t.Fatalf("limit_req[%d] key %q still held (%d)", i, e.key, e.count)
				}
			}
		}
	}
}

func TestReqStageTieGoesToLaterLimit(t *testing.T) {
	p := mustPolicy(t, Config{Req: []ReqSpec{
		{Key: "$host", Rate: "1r/s", Burst: 5},
		{Key: "$host", Rate: "1r/s", Burst: 5},
	}})
	runReqStage(t, p, []reqStageStep{
		{0, []string{"a", "a"}, Passed, 0, -1},
		{0, []string{"a", "a"}, Delayed, time.Second, 1},
	})
}

func TestReqStageEmptyKeys(t *testing.T) {
	p := mustPolicy(t, Config{Req: []ReqSpec{
		{Key: "$host", Rate: "1r/s", Burst: 5},
		{Key: "$http_x_tenant", Rate: "1r/s"},
	}})
	runReqStage(t, p, []reqStageStep{
		{0, []string{"", ""}, Skipped, 0, -1},
		{0, nil, Skipped, 0, -1},
		// The last limit's key is empty: the first is held, then charged.
		{0, []string{"a", ""}, Passed, 0, -1},
		{0, []string{"a", ""}, Delayed, time.Second, 0},
		{0, []string{"", "t"}, Passed, 0, -1},
		{0, []string{"", "t"}, Rejected, 0, 1},
		{0, []string{"a", "t"}, Rejected, 0, 1},
	})
	if a := excessOf(t, p, 0, "a"); a != 1000 {
		t.Fatalf("excess a = %d, want 1000", a)
	}
}

func TestReqStageDryRun(t *testing.T) {
	p := mustPolicy(t, Config{Req: []ReqSpec{{Key: "$host", Rate: "1r/s", Burst: 1, NoDelay: true, DryRun: true, Status: 429}}})
	runReqStage(t, p, []reqStageStep{
		{0, []string{"a"}, Passed, 0, -1},
		{0, []string{"a"}, Passed, 0, -1},
		{0, []string{"a"}, RejectedDryRun, 0, 0},
		{0, []string{"a"}, RejectedDryRun, 0, 0},
	})
	if a := excessOf(t, p, 0, "a"); a != 1000 {
		t.Fatalf("dry-run rejects charged the key: excess %d, want 1000", a)
	}
	// A dry-run delay is charged but not waited for.
	p = mustPolicy(t, Config{Req: []ReqSpec{{Key: "$host", Rate: "1r/s", Burst: 5, DryRun: true}}})
	runReqStage(t, p, []reqStageStep{
		{0, []string{"a"}, Passed, 0, -1},
		{0, []string{"a"}, Passed, 0, 0},
		{0, []string{"a"}, Passed, 0, 0},
	})
	if a := excessOf(t, p, 0, "a"); a != 2000 {
		t.Fatalf("dry-run delays: excess %d, want 2000 (charged as nginx does)", a)
	}
	// Mixed: a real limit's delay is kept when a dry-run one would be longer.
	p = mustPolicy(t, Config{Req: []ReqSpec{
		{Key: "$host", Rate: "1r/s", Burst: 5, DryRun: true},
		{Key: "$host", Rate: "2r/s", Burst: 5},
	}})
	runReqStage(t, p, []reqStageStep{
		{0, []string{"a", "a"}, Passed, 0, -1},
		{0, []string{"a", "a"}, Delayed, 500 * time.Millisecond, 1},
	})
}

func TestReqStageManyLimits(t *testing.T) {
	var specs []ReqSpec
	keys := make([]string, 10)
	for i := range 10 {
		specs = append(specs, ReqSpec{Key: "$host", Rate: fmt.Sprintf("%dr/s", i+1), Burst: 3})
		keys[i] = "k"
	}
	p := mustPolicy(t, Config{Req: specs})
	runReqStage(t, p, []reqStageStep{
		{0, keys, Passed, 0, -1},
		{0, keys, Delayed, time.Second, 0}, // the slowest rate waits longest
	})
}

func TestReqStageDoesNotAllocate(t *testing.T) {
	p := mustPolicy(t, Config{Req: []ReqSpec{
		{Key: "$host", Rate: "1000r/s", Burst: 100, NoDelay: true},
		{Key: "$remote_addr", Rate: "1000r/s", Burst: 100, NoDelay: true},
	}})
	keys := []string{"site1", "10.0.0.1"}
	p.ReqStage(t0, keys)
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		p.ReqStage(ms(i), keys)
		i++
	})
	if allocs != 0 {
		t.Errorf("ReqStage allocated %v times, want 0", allocs)
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

// TestReqStageConcurrent runs two limit_req from many goroutines over a
// small zone that keeps forcing expiry, then checks no entry is left held
// and the zone stayed within its bytes.
func TestReqStageConcurrent(t *testing.T) {
	p := mustPolicy(t, Config{Req: []ReqSpec{
		{Key: "$host", Rate: "10r/s", Burst: 5, Zone: "32k"},
		{Key: "$binary_remote_addr", Rate: "5r/s", Burst: 3, NoDelay: true, Zone: "32k"},
	}})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 8))
			for i := 0; i < 3000; i++ {
				keys := []string{fmt.Sprintf("h%d", rng.IntN(300)), fmt.Sprintf("a%d", rng.IntN(300))}
				p.ReqStage(ms(i*10), keys)
			}
		}(g)
	}
	wg.Wait()
	for i, r := range p.Req {
		l := r.Limiter
		if l.ZoneBytes() > reqZoneBudget(MinZone) || l.Len() == 0 {
			t.Errorf("limit_req[%d]: %d keys in %d bytes, want some within %d", i, l.Len(), l.ZoneBytes(), reqZoneBudget(MinZone))
		}
		for j := range l.shards {
			sh := &l.shards[j]
			for e := sh.lru.next; e != &sh.lru; e = e.next {
				if e.count != 0 {
					t.Fatalf("limit_req[%d] key %q still held (%d)", i, e.key, e.count)
				}
			}
			if sh.table.n != l.Len() {
				t.Fatalf("limit_req[%d]: table has %d entries, LRU %d", i, sh.table.n, l.Len())
			}
		}
	}
}

// TestReqStageDryRunBesideEnforced: a dry-run limit_req, before or after
// an enforced one, never changes what the enforced one decides; the
// dry-run limit sees the requests the enforced one admitted.
func TestReqStageDryRunBesideEnforced(t *testing.T) {
	at := time.Unix(1000, 0)
	for _, tt := range []struct {
		name string
		cfg  Config
		want []ReqDecision
	}{
		{
			name: "dry run first",
			cfg:  Config{Req: []ReqSpec{{Key: "$host", Rate: "1r/s", DryRun: true}, {Key: "$host", Rate: "1r/s", Status: 429}}},
			want: []ReqDecision{
				{Verdict: Passed, Rule: -1},
				{Verdict: Rejected, Rule: 1, Status: 429},
				{Verdict: Rejected, Rule: 1, Status: 429},
			},
		},
		{
			name: "dry run second",
			cfg:  Config{Req: []ReqSpec{{Key: "$host", Rate: "1r/s", Burst: 1, NoDelay: true}, {Key: "$host", Rate: "1r/s", DryRun: true}}},
			want: []ReqDecision{
				{Verdict: Passed, Rule: -1},
				{Verdict: RejectedDryRun, Rule: 1, Status: 503},
				{Verdict: Rejected, Rule: 0, Status: 503},
			},
		},
		{
			name: "enforced delay kept beside a dry-run reject",
			cfg:  Config{Req: []ReqSpec{{Key: "$host", Rate: "2r/s", Burst: 5}, {Key: "$host", Rate: "1r/s", DryRun: true}}},
			want: []ReqDecision{
				{Verdict: Passed, Rule: -1},
				{Verdict: RejectedDryRun, Rule: 1, Status: 503, Delay: 500 * time.Millisecond},
				{Verdict: RejectedDryRun, Rule: 1, Status: 503, Delay: time.Second},
			},
		},
	} {
		p := mustPolicy(t, tt.cfg)
		for i, want := range tt.want {
			if got := p.ReqStage(at, []string{"k", "k"}); got != want {
				t.Errorf("%s: step %d: ReqStage = %+v, want %+v", tt.name, i+1, got, want)
			}
		}
	}
}
