package limit

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestConnLimiterPerKey(t *testing.T) {
	l := NewConnLimiter(4, 0)
	var slots []Slot
	for i := 1; i <= 8; i++ {
		s, v := l.Acquire("site1")
		want := Passed
		if i > 4 {
			want = Rejected
		}
		if v != want {
			t.Fatalf("step %d: Acquire(site1) = %v, want %v", i, v, want)
		}
		if v == Passed {
			slots = append(slots, s)
		} else if s.Held() {
			t.Fatalf("step %d: a rejected Acquire returned a held slot", i)
		}
	}
	if got := l.InFlight("site1"); got != 4 {
		t.Fatalf("InFlight(site1) = %d, want 4", got)
	}
	// Other keys are not affected.
	for i := 0; i < 8; i++ {
		s, v := l.Acquire(fmt.Sprintf("site%d", i+2))
		if v != Passed {
			t.Fatalf("Acquire(site%d) = %v, want Passed", i+2, v)
		}
		s.Release()
	}
	// Releasing one frees one place.
	slots[0].Release()
	slots[0].Release() // a second Release is a no-op
	if got := l.InFlight("site1"); got != 3 {
		t.Fatalf("after one release (twice): InFlight(site1) = %d, want 3", got)
	}
	s, v := l.Acquire("site1")
	if v != Passed {
		t.Fatalf("after release: Acquire(site1) = %v, want Passed", v)
	}
	if _, v := l.Acquire("site1"); v != Rejected {
		t.Fatalf("at the limit again: Acquire(site1) = %v, want Rejected", v)
	}
	s.Release()
	for i := range slots {
		slots[i].Release()
	}
	if l.Len() != 0 || l.ZoneBytes() != 0 || l.InFlight("site1") != 0 {
		t.Fatalf("after releasing everything: Len %d, ZoneBytes %d, InFlight %d; want all 0", l.Len(), l.ZoneBytes(), l.InFlight("site1"))
	}
}

func TestConnLimiterSkipsEmptyAndLongKeys(t *testing.T) {
	l := NewConnLimiter(1, 0)
	long := strings.Repeat("k", MaxConnKey+1)
	for i := 0; i < 3; i++ {
		for _, k := range []string{"", long} {
			if s, v := l.Acquire(k); v != Skipped || s.Held() {
				t.Fatalf("step %d: Acquire(%d-byte key) = %v, held %v; want Skipped, none", i, len(k), v, s.Held())
			}
		}
	}
	max := strings.Repeat("k", MaxConnKey)
	if _, v := l.Acquire(max); v != Passed {
		t.Fatalf("Acquire(%d-byte key) = %v, want Passed", MaxConnKey, v)
	}
	if _, v := l.Acquire(max); v != Rejected {
		t.Fatalf("second Acquire(%d-byte key) = %v, want Rejected", MaxConnKey, v)
	}
	if l.Len() != 1 {
		t.Fatalf("Len = %d, want 1", l.Len())
	}
}

func TestConnLimiterZoneFull(t *testing.T) {
	// The smallest zone nginx allows: 8 pages, 7 of them for nodes after
	// the pool's header and page descriptors, less the zone's own two
	// 64-byte allocations (size.go): 446 keys, as nginx 1.22 takes.
	l := NewConnLimiter(2, MinZone)
	capacity := int(connZoneBudget(MinZone) / 64) // 10-byte keys cost 64 bytes
	if capacity != 7*4096/64-2 {
		t.Fatalf("capacity = %d, want %d", capacity, 7*4096/64-2)
	}
	slots := make([]Slot, 0, capacity)
	for i := 0; i < capacity; i++ {
		s, v := l.Acquire(fmt.Sprintf("key-%06d", i))
		if v != Passed {
			t.Fatalf("step %d: Acquire of a new key = %v, want Passed (zone has room)", i, v)
		}
		slots = append(slots, s)
	}
	if _, v := l.Acquire("key-new-001"); v != Rejected {
		t.Fatalf("zone full: Acquire of a new key = %v, want Rejected", v)
	}
	// An existing key still gets its second slot.
	s, v := l.Acquire("key-000000")
	if v != Passed {
		t.Fatalf("zone full: Acquire of an existing key = %v, want Passed", v)
	}
	s.Release()
	// A key leaving the zone makes room for a new one.
	slots[5].Release()
	s, v = l.Acquire("key-new-001")
	if v != Passed {
		t.Fatalf("after one key left: Acquire of a new key = %v, want Passed", v)
	}
	s.Release()
	for i := range slots {
		slots[i].Release()
	}
	if l.Len() != 0 || l.ZoneBytes() != 0 {
		t.Fatalf("Len %d ZoneBytes %d after releasing all, want 0 0", l.Len(), l.ZoneBytes())
	}
}

func TestConnLimiterBusiest(t *testing.T) {
	l := NewConnLimiter(10, 0)
	var slots []Slot
	for k, n := range map[string]int{"a": 3, "b": 5, "c": 1, "d": 3} {
		for i := 0; i < n; i++ {
			s, _ := l.Acquire(k)
			slots = append(slots, s)
		}
	}
	got := fmt.Sprint(l.Busiest(3))
	if want := "[{b 5} {a 3} {d 3}]"; got != want {
		t.Errorf("Busiest(3) = %s, want %s", got, want)
	}
	if got := l.Busiest(0); got != nil {
		t.Errorf("Busiest(0) = %v, want nil", got)
	}
	for i := range slots {
		slots[i].Release()
	}
	if got := l.Busiest(3); len(got) != 0 {
		t.Errorf("Busiest after release = %v, want empty", got)
	}
}

// TestConnLimiterConcurrent has many goroutines take and release slots on
// a few hot keys and many cold ones, checking the limit is never exceeded
// and that everything returns to zero.
func TestConnLimiterConcurrent(t *testing.T) {
	const perKey, goroutines, rounds = 3, 16, 2000
	l := NewConnLimiter(perKey, MinZone)
	var mu sync.Mutex
	held := map[string]int{}
	runConcurrently(goroutines, 1, func(_ int, rng *rand.Rand) {
		var mine []Slot
		var keys []string
		for i := 0; i < rounds; i++ {
			key := fmt.Sprintf("hot%d", rng.IntN(4))
			if rng.IntN(4) == 0 {
				key = fmt.Sprintf("cold%d", rng.IntN(1000))
			}
			s, v := l.Acquire(key)
			if v == Passed {
				mu.Lock()
				held[key]++
				if held[key] > perKey {
					t.Errorf("key %s has %d slots held, limit %d", key, held[key], perKey)
				}
				mu.Unlock()
				mine = append(mine, s)
				keys = append(keys, key)
			}
			if len(mine) > 0 && (rng.IntN(2) == 0 || len(mine) > 4) {
				j := rng.IntN(len(mine))
				mu.Lock()
				held[keys[j]]--
				mu.Unlock()
				mine[j].Release()
				mine[j].Release()
				mine = append(mine[:j], mine[j+1:]...)
				keys = append(keys[:j], keys[j+1:]...)
			}
		}
		for i := range mine {
			mu.Lock()
			held[keys[i]]--
			mu.Unlock()
			mine[i].Release()
		}
	})
	if l.Len() != 0 || l.ZoneBytes() != 0 {
		t.Fatalf("after all goroutines: Len %d ZoneBytes %d, want 0 0", l.Len(), l.ZoneBytes())
	}
	for k := range held {
		if n := l.InFlight(k); n != 0 {
			t.Fatalf("InFlight(%s) = %d, want 0", k, n)
		}
	}
}

func TestConnLimiterAcquireReleaseDoesNotAllocate(t *testing.T) {
	l := NewConnLimiter(4, 0)
	keys := []string{"a", "b", "c", "d"}
	for _, k := range keys { // warm the free lists and maps
		s, _ := l.Acquire(k)
		s.Release()
	}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		s, _ := l.Acquire(keys[i%len(keys)])
		s.Release()
		i++
	})
	if allocs != 0 {
		t.Errorf("Acquire+Release allocated %v times, want 0", allocs)
	}
}

func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("site%d.example.com", i)
	}
	return keys
}

// BenchmarkConnLimiterParallel measures one Acquire and Release on random
// keys out of 10,000, from every CPU at once.
func BenchmarkConnLimiterParallel(b *testing.B) {
	l := NewConnLimiter(4, 0)
	keys := benchKeys(10000)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(rand.Uint64(), 2))
		for pb.Next() {
			s, _ := l.Acquire(keys[rng.IntN(len(keys))])
			s.Release()
		}
	})
}

// BenchmarkConnLimiterHotKey measures Acquire and Release on one key from
// every CPU: the worst case, all on one shard.
func BenchmarkConnLimiterHotKey(b *testing.B) {
	l := NewConnLimiter(1<<20, 0)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s, _ := l.Acquire("site1.example.com")
			s.Release()
		}
	})
}

// TestConnLimiterHashCollisions makes every key's hash collide, so every
// key shares one chain, and checks counting and unlinking still work.
func TestConnLimiterHashCollisions(t *testing.T) {
	l := NewConnLimiter(2, 0)
	l.mask = 0
	keys := []string{"a", "b", "c", "d", "e"}
	var slots [][]Slot
	for _, k := range keys {
		var ss []Slot
		for i := 0; i < 3; i++ {
			s, v := l.Acquire(k)
			if want := map[bool]Verdict{true: Passed, false: Rejected}[i < 2]; v != want {
				t.Fatalf("Acquire(%s) #%d = %v, want %v", k, i+1, v, want)
			}
			if v == Passed {
				ss = append(ss, s)
			}
		}
		slots = append(slots, ss)
	}
	// Unlink from the middle, the head and the tail of the chain.
	for _, i := range []int{2, 4, 0, 3, 1} {
		for j := range slots[i] {
			slots[i][j].Release()
		}
		if n := l.InFlight(keys[i]); n != 0 {
			t.Fatalf("after releasing %s: InFlight = %d, want 0", keys[i], n)
		}
		for j, k := range keys {
			want := 2
			if len(slots[j]) == 0 || !slots[j][0].Held() {
				want = 0
			}
			if got := l.InFlight(k); got != want {
				t.Fatalf("after releasing %s: InFlight(%s) = %d, want %d", keys[i], k, got, want)
			}
		}
	}
	if l.Len() != 0 || l.ZoneBytes() != 0 {
		t.Fatalf("Len %d ZoneBytes %d, want 0 0", l.Len(), l.ZoneBytes())
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

// TestAppendBusiestMatchesSort checks AppendBusiest's bounded selection
// against a full sort of every key, on zones where most keys tie on their
// count, so that the n-th place falls among ties and only the keys' order
// decides which are listed.
func TestAppendBusiestMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 11))
	for round := range 200 {
		keys := []int{0, 1, 5, 50, 3000}[round%5]
		l := NewConnLimiter(3, 0)
		counts := map[string]int{}
		for range keys {
			// Short keys, keys whose first 8 bytes tie and keys that
			// are each other's prefixes, with and without zero bytes.
			k := fmt.Sprintf([]string{"k%d", "site%d.example.com", "a-long-prefix-%d", "\x00%d", "%d\x00"}[round%7%5], rng.IntN(4*keys))
			if _, v := l.Acquire(k); v == Passed {
				counts[k]++
			}
			for rng.IntN(3) == 0 {
				if _, v := l.Acquire(k); v == Passed {
					counts[k]++
				}
			}
		}
		var all []KeyCount
		for k, c := range counts {
			all = append(all, KeyCount{Key: k, InFlight: c})
		}
		slices.SortFunc(all, func(a, b KeyCount) int {
			if a.InFlight != b.InFlight {
				return b.InFlight - a.InFlight
			}
			return strings.Compare(a.Key, b.Key)
		})
		for _, n := range []int{1, 2, 10, 64, len(all), len(all) + 7} {
			if n < 1 {
				continue
			}
			want := all[:min(n, len(all))]
			dst := []KeyCount{{Key: "kept", InFlight: 9}}
			got := l.AppendBusiest(dst, n)
			if got[0] != dst[0] || !slices.Equal(got[1:], want) {
				t.Fatalf("round %d, %d keys: AppendBusiest(n %d) = %v, want %v after %v", round, len(all), n, got[1:], want, dst[0])
			}
		}
	}
}

// TestAppendBusiestAfterChurn checks AppendBusiest against a full sort of
// every key while keys come, go and change their counts between calls, so
// that the shards' bounds it passes shards over by are narrowed by one call
// and made stale by the Acquires and Releases before the next.
func TestAppendBusiestAfterChurn(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	l := NewConnLimiter(4, 0)
	held := map[string][]Slot{}
	for step := range 400 {
		for range 1 + rng.IntN(200) {
			k := fmt.Sprintf("site%d.example.com", rng.IntN(3000))
			if rng.IntN(2) == 0 {
				if s, v := l.Acquire(k); v == Passed {
					held[k] = append(held[k], s)
				}
			} else if ss := held[k]; len(ss) > 0 {
				ss[len(ss)-1].Release()
				if held[k] = ss[:len(ss)-1]; len(held[k]) == 0 {
					delete(held, k)
				}
			}
		}
		var all []KeyCount
		for k, ss := range held {
			all = append(all, KeyCount{Key: k, InFlight: len(ss)})
		}
		slices.SortFunc(all, compareBusiest)
		for _, n := range []int{1, 10, 64} {
			want := all[:min(n, len(all))]
			if got := l.AppendBusiest(nil, n); !slices.Equal(got, want) {
				t.Fatalf("step %d, %d keys: AppendBusiest(n %d) = %v, want %v", step, len(all), n, got, want)
			}
		}
	}
}

// TestConnLimiterSolo plays one random run of Acquires and Releases on a
// shared limiter and a Solo one, in a zone small enough to fill, and checks
// that they agree at every step: verdicts, in-flight counts, keys, zone
// bytes and the busiest keys.
func TestConnLimiterSolo(t *testing.T) {
	shared, solo := NewConnLimiter(3, MinZone), NewConnLimiter(3, MinZone)
	solo.Solo()
	solo.Solo() // a second call changes nothing
	rng := rand.New(rand.NewPCG(1, 2))
	var held [2][]Slot
	full := 0
	for step := range 20000 {
		if n := len(held[0]); n > 0 && rng.IntN(3) == 0 {
			i := rng.IntN(n)
			for j := range held {
				held[j][i].Release()
				held[j][i] = held[j][n-1]
				held[j] = held[j][:n-1]
			}
		} else {
			key := fmt.Sprintf("key-%d", rng.IntN(600))
			s0, v0 := shared.Acquire(key)
			s1, v1 := solo.Acquire(key)
			if v0 != v1 {
				t.Fatalf("step %d: Acquire(%q) = %v solo, want %v as shared", step, key, v1, v0)
			}
			if v0 == Passed {
				held[0], held[1] = append(held[0], s0), append(held[1], s1)
			}
			if v0 == Rejected && shared.InFlight(key) == 0 {
				full++
			}
			if got, want := solo.InFlight(key), shared.InFlight(key); got != want {
				t.Fatalf("step %d: InFlight(%q) = %d solo, want %d", step, key, got, want)
			}
		}
		if solo.Len() != shared.Len() || solo.ZoneBytes() != shared.ZoneBytes() {
			t.Fatalf("step %d: solo Len %d ZoneBytes %d, want %d %d", step, solo.Len(), solo.ZoneBytes(), shared.Len(), shared.ZoneBytes())
		}
		if step%1000 == 0 && !slices.Equal(solo.Busiest(5), shared.Busiest(5)) {
			t.Fatalf("step %d: solo Busiest(5) = %v, want %v", step, solo.Busiest(5), shared.Busiest(5))
		}
	}
	if full == 0 {
		t.Fatal("the zone never filled: the run does not test a full zone")
	}
	for i := range held[1] {
		held[1][i].Release()
	}
	if solo.Len() != 0 || solo.ZoneBytes() != 0 {
		t.Fatalf("solo: Len %d ZoneBytes %d after releasing all, want 0 0", solo.Len(), solo.ZoneBytes())
	}
}

// TestKeyPrefix checks that keys whose prefixes differ are in the order of
// their prefixes, for keys shorter and longer than a prefix, keys that are
// each other's prefixes and keys with zero bytes.
func TestKeyPrefix(t *testing.T) {
	keys := []string{"", "\x00", "\x00\x00", "a", "a\x00", "a\x00b", "ab", "abcdefgh", "abcdefgh\x00", "abcdefghi", "abcdefgi", "site1.example.com", "site10.example.com", "site2.example.com", "\xff\xff\xff\xff\xff\xff\xff\xff", "\xff\xff\xff\xff\xff\xff\xff\xff\xff"}
	for _, a := range keys {
		for _, b := range keys {
			pa, pb := keyPrefix(a), keyPrefix(b)
			if pa != pb && (pa < pb) != (a < b) {
				t.Errorf("keyPrefix(%q) = %#x, keyPrefix(%q) = %#x: not in the keys' order", a, pa, b, pb)
			}
		}
	}
}
