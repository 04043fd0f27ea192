package limit

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestConnStageCollidingHashes plays one random sequence of requests
// through ConnStage on one policy and on a twin whose keys all hash alike,
// and checks that every decision and every zone agree: per-key limits, dry
// run, empty and over-long keys, a full zone and fewer keys than limits.
func TestConnStageCollidingHashes(t *testing.T) {
	cfg := Config{Conn: []ConnSpec{
		{Key: "$host", PerKey: 2, Zone: "32k"},
		{Key: "$binary_remote_addr", PerKey: 3, DryRun: true},
		{Key: "$http_x_tenant", PerKey: 1, Status: 429},
	}}
	for _, seed := range []uint64{3, 4} {
		a, b := mustPolicy(t, cfg), mustPolicy(t, cfg)
		for i := range b.Conn {
			b.Conn[i].Limiter.mask = 0
		}
		rng := rand.New(rand.NewPCG(seed, seed))
		key := func(n int) string {
			switch i := rng.IntN(n + 2); i {
			case n:
				return ""
			case n + 1:
				return strings.Repeat("k", MaxConnKey+1)
			default:
				return fmt.Sprintf("key-%04d", i)
			}
		}
		type held struct{ a, b Slots }
		var open []held
		full := 0
		seen := map[ConnDecision]int{}
		for step := range 6000 {
			// About 600 requests in flight: more keys than the 32k zone
			// holds.
			if rng.IntN(1200) < len(open) {
				i := rng.IntN(len(open))
				open[i].a.Release()
				open[i].b.Release()
				open = slices.Delete(open, i, i+1)
			} else {
				keys := []string{key(2000), key(300), key(1000)}[:1+rng.IntN(3)]
				sa, da := a.ConnStage(keys)
				sb, db := b.ConnStage(keys)
				if da != db || sa.Len() != sb.Len() {
					t.Fatalf("seed %d step %d: keys %q: ConnStage %+v holding %d, colliding %+v holding %d", seed, step, keys, da, sa.Len(), db, sb.Len())
				}
				seen[da]++
				if da.Verdict == Rejected && da.Rule == 0 && a.Conn[0].Limiter.InFlight(keys[0]) == 0 {
					full++
				}
				open = append(open, held{sa, sb})
			}
			if step%20 != 0 {
				continue
			}
			for i := range a.Conn {
				la, lb := a.Conn[i].Limiter, b.Conn[i].Limiter
				if la.Len() != lb.Len() || la.ZoneBytes() != lb.ZoneBytes() || !slices.Equal(la.Busiest(5), lb.Busiest(5)) {
					t.Fatalf("seed %d step %d: limit_conn[%d]: %d keys in %d bytes, busiest %v; colliding %d keys in %d bytes, busiest %v",
						seed, step, i, la.Len(), la.ZoneBytes(), la.Busiest(5), lb.Len(), lb.ZoneBytes(), lb.Busiest(5))
				}
			}
		}
		if full == 0 {
			t.Errorf("seed %d: the zone was never full: the test does not cover it", seed)
		}
		for _, d := range []ConnDecision{{Passed, -1, 0}, {Skipped, -1, 0}, {RejectedDryRun, 1, 503}, {Rejected, 2, 429}} {
			if seen[d] == 0 {
				t.Errorf("seed %d: no %+v: the test does not cover it", seed, d)
			}
		}
		for i := range open {
			open[i].a.Release()
			open[i].b.Release()
		}
		for i := range b.Conn {
			if l := b.Conn[i].Limiter; l.Len() != 0 || l.ZoneBytes() != 0 {
				t.Fatalf("seed %d: limit_conn[%d]: %d keys in %d bytes after releasing all", seed, i, l.Len(), l.ZoneBytes())
			}
		}
	}
}
