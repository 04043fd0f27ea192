package limit

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestConnStageKeysMatchesConnStage plays one random sequence of requests
// through ConnStage on one policy and ConnStageKeys on a twin, and checks
// that every decision and every zone agree: per-key limits, dry run, empty
// and over-long keys, a full zone, colliding hashes and fewer keys than
// limits.
func TestConnStageKeysMatchesConnStage(t *testing.T) {
	cfg := Config{Conn: []ConnSpec{
		{Key: "$host", PerKey: 2, Zone: "32k"},
		{Key: "$binary_remote_addr", PerKey: 3, DryRun: true},
		{Key: "$http_x_tenant", PerKey: 1, Status: 429},
	}}
	for _, collide := range []bool{false, true} {
		a, b := mustPolicy(t, cfg), mustPolicy(t, cfg)
		if collide {
			for i := range b.Conn {
				b.Conn[i].Limiter.mask = 0
			}
		}
		rng := rand.New(rand.NewPCG(3, 3))
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
				sb, db := b.ConnStageKeys(b.ConnKeys(keys))
				if da != db || sa.Len() != sb.Len() {
					t.Fatalf("collide %v step %d: keys %q: ConnStage %+v holding %d, ConnStageKeys %+v holding %d", collide, step, keys, da, sa.Len(), db, sb.Len())
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
					t.Fatalf("collide %v step %d: limit_conn[%d]: %d keys in %d bytes, busiest %v; twin %d keys in %d bytes, busiest %v",
						collide, step, i, la.Len(), la.ZoneBytes(), la.Busiest(5), lb.Len(), lb.ZoneBytes(), lb.Busiest(5))
				}
			}
		}
		if full == 0 {
			t.Errorf("collide %v: the zone was never full: the test does not cover it", collide)
		}
		for _, d := range []ConnDecision{{Passed, -1, 0}, {Skipped, -1, 0}, {RejectedDryRun, 1, 503}, {Rejected, 2, 429}} {
			if seen[d] == 0 {
				t.Errorf("collide %v: no %+v: the test does not cover it", collide, d)
			}
		}
		for i := range open {
			open[i].a.Release()
			open[i].b.Release()
		}
		for i := range b.Conn {
			if l := b.Conn[i].Limiter; l.Len() != 0 || l.ZoneBytes() != 0 {
				t.Fatalf("collide %v: limit_conn[%d]: %d keys in %d bytes after releasing all", collide, i, l.Len(), l.ZoneBytes())
			}
		}
	}
}

// TestAcquireKeyOfAnotherLimiter checks that a ConnKey made by one limiter
// still counts the right key on another, whose hash seed differs.
func TestAcquireKeyOfAnotherLimiter(t *testing.T) {
	l1, l2 := NewConnLimiter(1, 0), NewConnLimiter(1, 0)
	k := l1.Key("site1")
	steps := []struct {
		l    *ConnLimiter
		want Verdict
	}{{l2, Passed}, {l2, Rejected}, {l1, Passed}, {l1, Rejected}}
	for n, s := range steps {
		if _, got := s.l.AcquireKey(k); got != s.want {
			t.Errorf("step %d: got %v, want %v", n, got, s.want)
		}
	}
	if got := l2.InFlight("site1"); got != 1 {
		t.Errorf("InFlight(site1) on the other limiter = %d, want 1", got)
	}
	var zero ConnKey
	if s, v := l1.AcquireKey(zero); v != Skipped || s.Held() {
		t.Errorf("the zero ConnKey: got %v, held %v; want Skipped, none", v, s.Held())
	}
}

// TestConnStageKeysDoesNotAllocate checks the simulator's path.
func TestConnStageKeysDoesNotAllocate(t *testing.T) {
	p := mustPolicy(t, Config{Conn: []ConnSpec{{Key: "$host", PerKey: 4}, {Key: "$binary_remote_addr", PerKey: 4}}})
	keys := p.ConnKeys([]string{"site1.example.com", "\x7f\x00\x00\x01"})
	if n := testing.AllocsPerRun(1000, func() {
		s, _ := p.ConnStageKeys(keys)
		s.Release()
	}); n != 0 {
		t.Errorf("ConnStageKeys and Release: %v allocations, want 0", n)
	}
}

func BenchmarkConnStageKeys(b *testing.B) {
	p := mustPolicy(b, Config{Conn: []ConnSpec{{Key: "$host", PerKey: 4}}})
	keys := p.ConnKeys([]string{"site1.example.com"})
	b.ReportAllocs()
	for b.Loop() {
		s, _ := p.ConnStageKeys(keys)
		s.Release()
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

// TestAppendBusiest checks that AppendBusiest appends what Busiest returns
// and leaves what dst held.
func TestAppendBusiest(t *testing.T) {
	l := NewConnLimiter(100, 0)
	for i := range 2000 {
		l.Acquire(fmt.Sprintf("k%d", i%(1+i%37)))
	}
	for _, n := range []int{0, 1, 5, 3000} {
		want := l.Busiest(n)
		dst := []KeyCount{{Key: "kept", InFlight: -1}}
		got := l.AppendBusiest(dst, n)
		if got[0] != dst[0] || !slices.Equal(got[1:], want) {
			t.Errorf("n %d: AppendBusiest = %v, want %v after %v", n, got, want, dst[0])
		}
		if n > 0 && (len(want) == 0 || len(want) > n) {
			t.Errorf("n %d: Busiest gave %d keys", n, len(want))
		}
	}
}
