package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"stampede/scenarios"
	"stampede/workerpool"
)

// synScenario writes into dir and loads a small random scenario of seed
// seed made to fill a tiny backlog: few workers, slow routes, SYNs dropped
// and sent again in bursts, the proxy's and the clients' timeouts in whole
// seconds that fall on the SYNs' times, constant arrivals, closed users
// and traces in whole milliseconds that tie with them, worker kills, boots
// and recycling, both overflow policies, sync and gthread workers.
func synScenario(tb testing.TB, dir string, seed uint64) (*scenarios.Scenario, string) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	// In whole seconds, every time of the run is one: the services, the
	// boots, the arrivals, the SYNs and the timeouts meet.
	whole := rng.IntN(3) == 0
	either := func(w, other string) string {
		if whole {
			return w
		}
		return other
	}
	var b strings.Builder
	dur := []time.Duration{20 * time.Second, 40 * time.Second, time.Minute, 2 * time.Minute, 3 * time.Minute}[rng.IntN(5)]
	fmt.Fprintf(&b, "name: syn%d\nduration: %v\nseed: %d\n", seed, dur, rng.IntN(1000)+1)
	// gthread workers hold WorkerConnections connections each, so one
	// worker and a crowd of a thousand users fill them.
	gthread := rng.IntN(4) == 0
	workers, backlog, threads := 1+rng.IntN(3), rng.IntN(5), 1
	if gthread {
		workers, threads = 1, 2+rng.IntN(2)
	}
	fmt.Fprintf(&b, "backend:\n  workers: %d\n  backlog: %d\n  threads: %d\n", workers, backlog, threads)
	if !whole && rng.IntN(2) == 0 { // the arbiter's ticks are not on whole seconds
		fmt.Fprintf(&b, "  timeout: %s\n", pick("1s", "2s", "3s", "7s", "30s"))
	}
	fmt.Fprintf(&b, "  boot: %s\n", either(pick("0s", "1s", "2s"), pick("0s", "500ms", "1s", "2s")))
	if whole || rng.IntN(3) == 0 {
		fmt.Fprintf(&b, "  max_requests: %d\n  max_requests_jitter: %d\n", 1+rng.IntN(5), rng.IntN(3))
	}
	if rng.IntN(4) == 0 {
		b.WriteString("  backlog_overflow: reset\n")
	}
	fmt.Fprintf(&b, "  on_client_abort: %s\n", pick("continue", "cancel"))
	fmt.Fprintf(&b, "  routes:\n    - {name: page, path: /, service: %q}\n    - {name: slow, path: /slow, service: %q}\n",
		either(pick("1s", "2s"), pick("1s", "2s", "500ms", "10ms", "exp:300ms", "uniform:100ms..3s")),
		either(pick("4s", "8s", "3s"), pick("5s", "20s", "uniform:2s..10s", "lognormal:median=3s,p99=20s")))
	fmt.Fprintf(&b, "proxy:\n  read_timeout: %s\n  connect_timeout: %s\n",
		pick("0s", "3s", "7s", "15s", "31s", "60s", "127s"), pick("1s", "3s", "7s", "10s", "15s", "31s", "60s", "63s", "127s", "200s"))
	if rng.IntN(2) == 0 {
		fmt.Fprintf(&b, "  limit_conn: {key: $host, per_key: %d}\n", 1+rng.IntN(4))
	}
	if rng.IntN(4) == 0 {
		b.WriteString("  limit_req: {key: $host, rate: 2r/s, burst: 5}\n")
	}
	b.WriteString("tenants:\n")
	var trace strings.Builder
	routes := func() string { return pick("{page: 1}", "{slow: 1}", "{page: 3, slow: 1}") }
	timeout := func() string {
		return pick("", ", client_timeout: 1s", ", client_timeout: 3s", ", client_timeout: 7s", ", client_timeout: 15s", ", client_timeout: 31s", ", client_timeout: 63s", ", client_timeout: 2m")
	}
	for g := range 1 + rng.IntN(4) {
		n := 1 + rng.IntN(4)
		fmt.Fprintf(&b, "  - group: g%d\n    count: %d\n    host: \"g%d-{i}.example.com\"\n    load: ", g, n, g)
		model := rng.IntN(4)
		if whole && model == 0 {
			model = 1 // not poisson
		}
		switch model {
		case 0:
			fmt.Fprintf(&b, "{model: open, rate: %s, routes: %s%s}\n", pick("1/s", "3/s", "10/s", "30/s"), routes(), timeout())
		case 1:
			fmt.Fprintf(&b, "{model: open, arrivals: constant, rate: %s, start: %s, routes: %s%s}\n", either(pick("1/s", "1/s", "2/s"), pick("1/s", "2/s", "4/s", "10/s")), either(pick("0s", "1s"), pick("0s", "1s", "500ms")), routes(), timeout())
		case 2:
			fmt.Fprintf(&b, "{model: closed, users: %d, think: %s, iterations: %d, on_timeout: %s, routes: %s%s}\n",
				1+rng.IntN(10), either(pick("0s", "1s", "3s"), pick("0s", "1s", "3s", "250ms")), rng.IntN(6), pick("retry", "give_up"), routes(), timeout())
		default:
			fmt.Fprintf(&b, "{model: trace, routes: {page: 3, slow: 1}%s}\n", timeout())
			for k := 1; k <= n; k++ {
				fmt.Fprintf(&trace, "t g%d %d\n", g, k)
				for _, route := range []string{"page", "slow"} {
					fmt.Fprintf(&trace, "r %s", route)
					var t time.Duration
					gaps := 7
					if whole {
						gaps = 3 // whole seconds
					}
					for range rng.IntN(60) {
						gap := []time.Duration{0, time.Second, 2 * time.Second, time.Millisecond, 500 * time.Millisecond, 3 * time.Millisecond, 999 * time.Millisecond}[rng.IntN(gaps)]
						if t += gap; t >= dur {
							break
						}
						fmt.Fprintf(&trace, " %d", gap.Microseconds())
					}
					trace.WriteString("\n")
				}
			}
		}
	}
	if gthread {
		connections := workerpool.WorkerConnections + backlog
		if backlog > 0 {
			connections++
		}
		// A host each, past any limit_conn per $host.
		fmt.Fprintf(&b, "  - group: crowd\n    count: %d\n    host: \"crowd{i}.example.com\"\n    load: {model: closed, users: 1, think: %s, iterations: %d, on_timeout: retry, routes: {slow: 1}%s}\n",
			connections+rng.IntN(40), pick("0s", "1s"), 2+rng.IntN(3), timeout())
	}
	if trace.Len() > 0 {
		b.WriteString("trace: syn.trace\n")
		if err := os.WriteFile(filepath.Join(dir, "syn.trace"), []byte(trace.String()), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	src := b.String()
	path := filepath.Join(dir, "syn.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		tb.Fatal(err)
	}
	sc, err := scenarios.LoadWith(path, nil)
	if err != nil {
		tb.Fatalf("seed %d: %v\n%s", seed, err, src)
	}
	if rng.IntN(5) == 0 {
		sc.Proxy.ConnectTimeout = 0 // none: the kernel gives up first
	}
	return sc, src
}

// synRun is what one run of a scenario gave: every result and sample in
// order, and the stats.
type synRun struct {
	c  collector
	st Stats
}

// playSYNs runs sc with its dropped SYNs in the syns (lazy) or, eager,
// each through the calendar and connect.
func playSYNs(tb testing.TB, sc *scenarios.Scenario, eager bool) synRun {
	tb.Helper()
	var run synRun
	e, err := newEngine(sc, &run.c, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	e.eagerSYN = eager
	if err := e.run(context.Background()); err != nil {
		tb.Fatal(err)
	}
	run.st = e.stats
	return run
}

// diffSYNs reports how the lazy run of sc differs from the eager one, ""
// if in nothing.
func diffSYNs(lazy, eager synRun) string {
	if lazy.st.Redropped > lazy.st.SYNDrops || eager.st.Redropped != 0 {
		return fmt.Sprintf("redropped %d of %d SYN drops (eager %d)", lazy.st.Redropped, lazy.st.SYNDrops, eager.st.Redropped)
	}
	ls, es := lazy.st, eager.st
	ls.Redropped = 0
	if ls != es {
		return fmt.Sprintf("stats\n lazy  %+v\n eager %+v", ls, es)
	}
	if i, ok := firstDiff(lazy.c.results, eager.c.results); !ok {
		return fmt.Sprintf("results differ from #%d of %d/%d: lazy %+v, eager %+v", i, len(lazy.c.results), len(eager.c.results), nth(lazy.c.results, i), nth(eager.c.results, i))
	}
	if i, ok := firstDiff(lazy.c.busy, eager.c.busy); !ok {
		return fmt.Sprintf("backend samples differ from #%d: lazy %+v, eager %+v", i, nth(lazy.c.busy, i), nth(eager.c.busy, i))
	}
	if !reflect.DeepEqual(lazy.c.keys, eager.c.keys) {
		return "key samples differ"
	}
	return ""
}

// firstDiff returns the first index at which a and b differ.
func firstDiff[T comparable](a, b []T) (int, bool) {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i, false
		}
	}
	return min(len(a), len(b)), len(a) == len(b)
}

// nth returns xs[i], or the zero T past its end.
func nth[T any](xs []T, i int) (x T) {
	if i < len(xs) {
		x = xs[i]
	}
	return x
}

// TestSYNsLazyIsEager plays random scenarios that drop SYNs on full
// backlogs with the syns and with every SYN through the calendar, and
// requires the same results, samples and stats of both. The scenarios
// together must have dropped SYNs again in the syns, let some in there,
// and ended attempts by each of the timeouts and the kernel's giving up.
func TestSYNsLazyIsEager(t *testing.T) {
	cases := 1000 // some mistakes show in one scenario of several hundred
	if testing.Short() || raceBuild {
		cases = 100
	}
	var redropped, drops, failed, timedOut, gthreadDrops uint64
	for seed := range uint64(cases) {
		sc, src := synScenario(t, t.TempDir(), seed)
		lazy, eager := playSYNs(t, sc, false), playSYNs(t, sc, true)
		if d := diffSYNs(lazy, eager); d != "" {
			t.Fatalf("seed %d: %s\n%s", seed, d, src)
		}
		redropped += lazy.st.Redropped
		if lazy.st.Backend.Threads > 1 {
			gthreadDrops += lazy.st.Redropped
		}
		drops += lazy.st.SYNDrops
		for _, r := range lazy.c.results {
			switch {
			case r.Status == statusBadGateway && r.Work == 0 && r.Latency >= 127*time.Second: // the kernel gave up
				failed++
			case r.Status == statusGatewayTimeout:
				timedOut++
			}
		}
	}
	t.Logf("%d scenarios: %d SYN drops, %d of them again in the syns (%d on gthread workers); %d 502s without work, %d 504s", cases, drops, redropped, gthreadDrops, failed, timedOut)
	if redropped == 0 || redropped == drops || gthreadDrops == 0 || failed == 0 || timedOut == 0 {
		t.Errorf("the scenarios do not provoke what the test is for: %d SYN drops, %d in the syns (%d on gthread workers), %d 502s without work, %d 504s", drops, redropped, gthreadDrops, failed, timedOut)
	}
}

// FuzzSYNsLazyIsEager is TestSYNsLazyIsEager for one random scenario of
// each seed.
func FuzzSYNsLazyIsEager(f *testing.F) {
	for _, seed := range []uint64{0, 1, 7, 42} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		sc, src := synScenario(t, t.TempDir(), seed)
		if d := diffSYNs(playSYNs(t, sc, false), playSYNs(t, sc, true)); d != "" {
			t.Fatalf("seed %d: %s\n%s", seed, d, src)
		}
	})
}

// TestSynsOrder pushes entries into the stages, each stage's in its
// order, between pops that empty the syns now and then, and requires every
// pop to give the earliest entry held, by (at, seq).
func TestSynsOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var q syns
	var last [synStages]time.Duration
	var held []synEntry // in no order
	seq := uint64(1)
	for step := range 20000 {
		if rng.IntN(2) == 0 || step%1000 > 900 { // pop, and empty the syns at times
			if len(held) == 0 {
				if q.len() != 0 {
					t.Fatalf("step %d: %d entries, want none", step, q.len())
				}
				continue
			}
			k := 0
			for j := range held {
				if held[j].key().before(held[k].key()) {
					k = j
				}
			}
			want := held[k]
			held = slices.Delete(held, k, k+1)
			if top := q.top(); top != want.key() {
				t.Fatalf("step %d: top %+v, want %+v", step, top, want.key())
			}
			got, stage := q.pop()
			if got != want || stage != int(want.ref) {
				t.Fatalf("step %d: pop %+v from stage %d, want %+v from %d", step, got, stage, want, want.ref)
			}
			continue
		}
		i := rng.IntN(synStages)
		if q.stages[i].n > 0 && q.fits(i, last[i]-time.Millisecond, seq) {
			t.Fatalf("step %d: stage %d: an entry before its latest fits", step, i)
		}
		last[i] += time.Duration(rng.IntN(3)) * time.Millisecond
		s := synEntry{at: last[i], seq: seq, ref: int32(i), deadline: never}
		seq++
		if !q.fits(i, s.at, s.seq) {
			t.Fatalf("step %d: stage %d: an entry at %v in order does not fit", step, i, s.at)
		}
		q.push(i, s)
		held = append(held, s)
		if q.len() != len(held) {
			t.Fatalf("step %d: %d entries, want %d", step, q.len(), len(held))
		}
	}
}
