package limit

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

type reqStep struct {
	at      int // ms after t0
	verdict Verdict
	delay   time.Duration
}

func runReqSteps(t *testing.T, l *ReqLimiter, key string, steps []reqStep) {
	t.Helper()
	for i, st := range steps {
		got := l.Allow(key, ms(st.at))
		if got.Verdict != st.verdict || got.Delay != st.delay {
			t.Fatalf("step %d: Allow(t0+%dms) = %v %v (excess %d), want %v %v", i+1, st.at, got.Verdict, got.Delay, got.Excess, st.verdict, st.delay)
		}
	}
}

func mustRate(t testing.TB, s string) Rate {
	r, err := ParseRate(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The worked examples of DESIGN.md, all requests at the same millisecond.
func TestReqLimiterBurstNoDelay(t *testing.T) {
	// rate=1r/s burst=5 nodelay, 7 simultaneous → 6 pass, 1 rejected.
	l := NewReqLimiter(mustRate(t, "1r/s"), 5, 0, true, 0)
	steps := make([]reqStep, 7)
	for i := range steps {
		steps[i] = reqStep{0, Passed, 0}
	}
	steps[6].verdict = Rejected
	runReqSteps(t, l, "site1", steps)
	if ex, _, _ := l.State("site1"); ex != 5000 {
		t.Fatalf("excess after the burst = %d, want 5000 (the reject left it unchanged)", ex)
	}
}

func TestReqLimiterTwoStage(t *testing.T) {
	// rate=5r/s burst=12 delay=8, 14 simultaneous → 1–9 at once, 10–13
	// delayed 200/400/600/800 ms, 14 rejected.
	l := NewReqLimiter(mustRate(t, "5r/s"), 12, 8, false, 0)
	var steps []reqStep
	for i := 1; i <= 9; i++ {
		steps = append(steps, reqStep{0, Passed, 0})
	}
	for _, d := range []int{200, 400, 600, 800} {
		steps = append(steps, reqStep{0, Delayed, time.Duration(d) * time.Millisecond})
	}
	steps = append(steps, reqStep{0, Rejected, 0})
	runReqSteps(t, l, "site1", steps)
}

func TestReqLimiterDelayed(t *testing.T) {
	// rate=2r/s burst=3 without nodelay: every request above the rate waits
	// (excess)·1000/rate.
	l := NewReqLimiter(mustRate(t, "2r/s"), 3, 0, false, 0)
	runReqSteps(t, l, "k", []reqStep{
		{0, Passed, 0},
		{0, Delayed, 500 * time.Millisecond},
		{0, Delayed, 1000 * time.Millisecond},
		{0, Delayed, 1500 * time.Millisecond},
		{0, Rejected, 0},
		{250, Rejected, 0},                      // 3000 − 500 + 1000 = 3500 > 3000
		{500, Delayed, 1500 * time.Millisecond}, // 3000 − 1000 + 1000 = 3000
	})
}

func TestReqLimiterRefill(t *testing.T) {
	l := NewReqLimiter(mustRate(t, "1r/s"), 5, 0, true, 0)
	var steps []reqStep
	for i := 0; i < 6; i++ {
		steps = append(steps, reqStep{0, Passed, 0})
	}
	steps = append(steps,
		reqStep{0, Rejected, 0},
		reqStep{999, Rejected, 0},  // 5000 − 999 + 1000 = 5001
		reqStep{1000, Passed, 0},   // 5000 − 1000 + 1000 = 5000
		reqStep{1000, Rejected, 0}, // same ms: 6000
		reqStep{1500, Rejected, 0}, // 5000 − 500 + 1000
		reqStep{3000, Passed, 0},   // 5000 − 2000 + 1000 = 4000
		reqStep{3000, Passed, 0},   // 5000
		reqStep{3000, Rejected, 0},
		reqStep{60000, Passed, 0}, // 5000 − 57000 + 1000, floored at 0
	)
	runReqSteps(t, l, "k", steps)
	if ex, last, _ := l.State("k"); ex != 0 || !last.Equal(ms(60000)) {
		t.Fatalf("state = %d at %v, want 0 at t0+60s", ex, last)
	}
}

func TestReqLimiterPerMinute(t *testing.T) {
	// 30r/m is 500 milli-requests per second: one request every 2 s.
	l := NewReqLimiter(mustRate(t, "30r/m"), 0, 0, false, 0)
	runReqSteps(t, l, "k", []reqStep{
		{0, Passed, 0},
		{1000, Rejected, 0}, // 0 − 500 + 1000 = 500 > 0
		{1999, Rejected, 0},
		{2000, Passed, 0}, // 0 − 1000 + 1000 = 0
	})
	// 1r/m is 1000/60 = 16 milli-requests per second in nginx's integer
	// arithmetic, so the next request passes only after 62.5 s, not 60 s.
	l = NewReqLimiter(mustRate(t, "1r/m"), 0, 0, false, 0)
	runReqSteps(t, l, "k", []reqStep{
		{0, Passed, 0},
		{60000, Rejected, 0}, // 1000 − 960 = 40 > 0
		{62499, Rejected, 0},
		{62500, Passed, 0},
	})
}

func TestReqLimiterClock(t *testing.T) {
	l := NewReqLimiter(mustRate(t, "1r/s"), 10, 0, true, 0)
	runReqSteps(t, l, "k", []reqStep{
		{100000, Passed, 0}, // excess 0, last 100 s
		{100000, Passed, 0}, // 1000; same ms: last stays
		{99000, Passed, 0},  // back 1 s counts as no time: 2000
		{30000, Passed, 0},  // back 70 s counts as 1 ms: 2000 − 1 + 1000 = 2999
	})
	ex, last, _ := l.State("k")
	if ex != 2999 || !last.Equal(ms(30000)) {
		t.Fatalf("after the clock went back: excess %d last %v, want 2999 at t0+30s", ex, last)
	}
}

func TestReqLimiterSkipsEmptyAndLongKeys(t *testing.T) {
	l := NewReqLimiter(mustRate(t, "1r/s"), 0, 0, false, 0)
	long := strings.Repeat("x", MaxReqKey+1)
	for i := 0; i < 3; i++ {
		for _, k := range []string{"", long} {
			if got := l.Allow(k, t0); got.Verdict != Skipped {
				t.Fatalf("step %d: Allow(%d-byte key) = %v, want Skipped", i, len(k), got.Verdict)
			}
		}
	}
	if l.Len() != 0 {
		t.Fatalf("Len = %d, want 0", l.Len())
	}
	max := strings.Repeat("x", MaxReqKey)
	if got := l.Allow(max, t0).Verdict; got != Passed {
		t.Fatalf("Allow(%d-byte key) = %v, want Passed", MaxReqKey, got)
	}
	if got := l.Allow(max, t0).Verdict; got != Rejected {
		t.Fatalf("second Allow(%d-byte key) = %v, want Rejected", MaxReqKey, got)
	}
}

// smallZone is the smallest zone: one shard, six pages for nodes less the
// zone's root, 191 keys of up to 48 bytes.
const smallZone = MinZone

func TestReqLimiterExpiry(t *testing.T) {
	l := NewReqLimiter(mustRate(t, "1r/s"), 5, 0, true, smallZone)
	capacity := int(reqZoneBudget(smallZone) / 128)
	if capacity != 191 { // nginx 1.22's, see size.go
		t.Fatalf("capacity %d, want 191", capacity)
	}
	key := func(i int) string { return fmt.Sprintf("key-%04d", i) }
	for i := 0; i < capacity; i++ {
		if got := l.Allow(key(i), ms(i)).Verdict; got != Passed {
			t.Fatalf("step %d: Allow(new key) = %v, want Passed", i, got)
		}
	}
	if l.Len() != capacity {
		t.Fatalf("Len = %d, want %d", l.Len(), capacity)
	}
	// Key 1 has a request again: it is now the newest.
	l.Allow(key(1), ms(1000))
	// Full, nothing idle for 60 s: the oldest (key 0) is dropped by force.
	if got := l.Allow("new-1", ms(1000)).Verdict; got != Passed {
		t.Fatalf("zone full: Allow(new-1) = %v, want Passed", got)
	}
	if _, _, ok := l.State(key(0)); ok {
		t.Fatalf("key 0 still in the zone after a forced expiry")
	}
	if l.Len() != capacity {
		t.Fatalf("Len = %d, want %d", l.Len(), capacity)
	}
	// 61 s later, a new key expires the two oldest idle, drained keys
	// (keys 2 and 3; key 1 was bumped) and takes one place.
	if got := l.Allow("new-2", ms(61000)).Verdict; got != Passed {
		t.Fatalf("Allow(new-2) = %v, want Passed", got)
	}
	if l.Len() != capacity-1 {
		t.Fatalf("Len = %d, want %d", l.Len(), capacity-1)
	}
	for i, want := range map[int]bool{1: true, 2: false, 3: false, 4: true} {
		if _, _, ok := l.State(key(i)); ok != want {
			t.Fatalf("key %d in the zone = %v, want %v", i, ok, want)
		}
	}
	// A key with excess still to drain is not expired at 60 s idle.
	l2 := NewReqLimiter(mustRate(t, "1r/m"), 5, 0, true, smallZone)
	for i := 0; i < 3; i++ {
		l2.Allow("busy", t0) // excess 2000
	}
	l2.Allow("other", ms(61000))
	if _, _, ok := l2.State("busy"); !ok {
		t.Fatalf("a key with 2000 − 16·61 > 0 excess left was expired")
	}
	l2.Allow("third", ms(200000)) // 2000 − 16·200 < 0: drained
	if _, _, ok := l2.State("busy"); ok {
		t.Fatalf("a drained key idle 200 s was not expired")
	}
}

func TestReqLimiterZoneFullOfHeldKeys(t *testing.T) {
	l := NewReqLimiter(mustRate(t, "1r/s"), 5, 0, true, smallZone)
	type held struct {
		e  *reqEntry
		sh *reqShard
	}
	var hs []held
	for i := 0; ; i++ {
		rc, _, e, sh := l.lookup(fmt.Sprintf("k%d", i), 0, false)
		if rc == lookupFull {
			break
		}
		if rc != lookupAgain {
			t.Fatalf("lookup %d = %d, want lookupAgain", i, rc)
		}
		hs = append(hs, held{e, sh})
	}
	if len(hs) != 191 {
		t.Fatalf("held %d keys before the zone was full, want 191", len(hs))
	}
	if got := l.Allow("new", ms(100000)).Verdict; got != Rejected {
		t.Fatalf("zone full of held keys: Allow(new) = %v, want Rejected", got)
	}
	l.unlock(hs[0].e, hs[0].sh)
	if got := l.Allow("new", ms(100000)).Verdict; got != Passed {
		t.Fatalf("after one key was let go: Allow(new) = %v, want Passed", got)
	}
	for _, h := range hs[1:] {
		l.unlock(h.e, h.sh)
	}
}

func TestReqLimiterHashCollisions(t *testing.T) {
	l := NewReqLimiter(mustRate(t, "1r/s"), 1, 0, true, smallZone)
	l.mask = 0
	for _, k := range []string{"a", "b", "c"} {
		runReqSteps(t, l, k, []reqStep{{0, Passed, 0}, {0, Passed, 0}, {0, Rejected, 0}})
	}
	// Expire them all (idle and drained) by filling the zone at +2 min.
	for i := 0; i < 300; i++ {
		l.Allow(fmt.Sprintf("n%d", i), ms(120000))
	}
	for _, k := range []string{"a", "b", "c"} {
		if _, _, ok := l.State(k); ok {
			t.Fatalf("key %s not expired", k)
		}
	}
	if l.Len() != 191 || l.ZoneBytes() != 191*128 {
		t.Fatalf("Len %d ZoneBytes %d, want 191 and %d", l.Len(), l.ZoneBytes(), 191*128)
	}
}

func TestReqLimiterConcurrent(t *testing.T) {
	l := NewReqLimiter(mustRate(t, "100r/s"), 10, 0, true, 1<<20)
	var mu sync.Mutex
	passed := map[string]int{}
	runConcurrently(8, 3, func(_ int, rng *rand.Rand) {
		for i := 0; i < 2000; i++ {
			k := fmt.Sprintf("k%d", rng.IntN(20))
			if l.Allow(k, t0).Verdict == Passed {
				mu.Lock()
				passed[k]++
				mu.Unlock()
			}
		}
	})
	// All at one instant: every key admits exactly 1 + burst.
	for k, n := range passed {
		if n != 11 {
			t.Errorf("key %s: %d passed, want 11", k, n)
		}
	}
}

// BenchmarkReqLimiterParallel measures admission of random keys out of
// 10,000 from every CPU. The goroutines read one real clock, every 64
// requests, as the handler reads it for every request: time moves forward
// for the limiter alike from every goroutine, so that keys age and expire
// as they would in a proxy. (A clock of each goroutine's own, counted from
// its requests, ran the goroutines' times apart, and the limiter then saw
// time jump back and forth by however far one goroutine had run ahead.)
func BenchmarkReqLimiterParallel(b *testing.B) {
	l := NewReqLimiter(mustRate(b, "1000r/s"), 100, 0, true, 0)
	keys := benchKeys(10000)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(rand.Uint64(), 4))
		var now time.Time
		for i := 0; pb.Next(); i++ {
			if i%64 == 0 {
				now = time.Now()
			}
			l.Allow(keys[rng.IntN(len(keys))], now)
		}
	})
}
