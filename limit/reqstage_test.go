package limit

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

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

// TestReqStageConcurrent runs two limit_req from many goroutines over a
// small zone that keeps forcing expiry, then checks no entry is left held
// and the zone stayed within its bytes.
func TestReqStageConcurrent(t *testing.T) {
	p := mustPolicy(t, Config{Req: []ReqSpec{
		{Key: "$host", Rate: "10r/s", Burst: 5, Zone: "32k"},
		{Key: "$binary_remote_addr", Rate: "5r/s", Burst: 3, NoDelay: true, Zone: "32k"},
	}})
	runConcurrently(8, 8, func(_ int, rng *rand.Rand) {
		for i := 0; i < 3000; i++ {
			keys := []string{fmt.Sprintf("h%d", rng.IntN(300)), fmt.Sprintf("a%d", rng.IntN(300))}
			p.ReqStage(ms(i*10), keys)
		}
	})
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
