package limiterproxy

import (
	"hash/maphash"
	"sort"
	"sync"
	"sync/atomic"
)

// connShards is how many independently locked parts a ConnLimiter's keys
// are spread over, so that requests for different keys rarely wait on one
// another.
const connShards = 64

// ConnLimiter counts requests in flight per key in a bounded zone, as
// nginx's limit_conn does: a key exists only while it has requests in
// flight, at most PerKey requests per key are admitted, and a key that is
// not in the zone is rejected when its node would not fit.
//
// Zone capacity is counted in bytes with nginx's slab model (see the
// comment on MinZone): a key of up to 28 bytes costs 64 bytes, so 10m holds
// about 162,000 of them. The budget is global to the limiter, so "full" is
// exact; keys are spread over 64 mutex-guarded shards by hash.
//
// Use NewConnLimiter; the zero ConnLimiter is not usable. A ConnLimiter is
// safe for concurrent use. It has no clock and starts no goroutines.
type ConnLimiter struct {
	perKey int32
	budget int64
	used   atomic.Int64 // bytes of nodes in the zone
	seed   maphash.Seed
	mask   uint64 // all ones; tests clear it to make every key's hash collide
	shards [connShards]connShard
}

type connShard struct {
	mu sync.Mutex
	// m maps a key's hash to its entry; entries whose keys share a hash
	// are chained through next. Keying the map by the hash means a key's
	// bytes are hashed once per Acquire and never on Release.
	m    map[uint64]*connEntry
	free *connEntry // recycled entries, so a busy zone costs no allocation
	_    [64 - 8 - 8 - 8]byte
}

type connEntry struct {
	key  string
	h    uint64
	n    int32
	next *connEntry // the next entry with the same hash, or on the free list
}

// NewConnLimiter returns a limiter admitting at most perKey requests per key
// (perKey below 1 is taken as 1) in a zone of zoneBytes bytes (nginx's
// "10m"; zero or less means DefaultZone, 10 MiB).
func NewConnLimiter(perKey int, zoneBytes int64) *ConnLimiter {
	if perKey < 1 {
		perKey = 1
	}
	if perKey > 1<<30 {
		perKey = 1 << 30
	}
	if zoneBytes <= 0 {
		zoneBytes = 10 << 20
	}
	l := &ConnLimiter{perKey: int32(perKey), budget: zoneBudget(zoneBytes), seed: maphash.MakeSeed(), mask: ^uint64(0)}
	for i := range l.shards {
		l.shards[i].m = make(map[uint64]*connEntry)
	}
	return l
}

// PerKey returns the limit per key.
func (l *ConnLimiter) PerKey() int { return int(l.perKey) }

// Slot is one request's hold on a ConnLimiter key. The zero Slot holds
// nothing. Release it exactly once; a second Release on the same Slot does
// nothing. Releasing two copies of one Slot releases twice: keep one.
type Slot struct {
	l  *ConnLimiter
	sh *connShard
	e  *connEntry
}

// Held reports whether s holds a slot.
func (s *Slot) Held() bool { return s.l != nil }

// Release frees the slot. The key leaves the zone with its last request.
// Release is not safe to call on the same Slot from two goroutines at once.
func (s *Slot) Release() {
	l, sh, e := s.l, s.sh, s.e
	if l == nil {
		return
	}
	*s = Slot{}
	sh.mu.Lock()
	e.n--
	if e.n > 0 {
		sh.mu.Unlock()
		return
	}
	if head := sh.m[e.h]; head == e {
		if e.next == nil {
			delete(sh.m, e.h)
		} else {
			sh.m[e.h] = e.next
		}
	} else {
		for p := head; p != nil; p = p.next {
			if p.next == e {
				p.next = e.next
				break
			}
		}
	}
	cost := nodeCost(connNodeHead + len(e.key))
	e.key = ""
	e.next = sh.free
	sh.free = e
	sh.mu.Unlock()
	l.used.Add(-cost)
}

// Acquire takes a slot for key. It returns Passed and the slot, Rejected
// when the key already has PerKey requests in flight or is new and the zone
// is full, or Skipped when key is empty or longer than MaxConnKey bytes
// (nginx does not count those). Only Passed returns a slot to release.
func (l *ConnLimiter) Acquire(key string) (Slot, Verdict) {
	if key == "" || len(key) > MaxConnKey {
		return Slot{}, Skipped
	}
	h := maphash.String(l.seed, key) & l.mask
	sh := &l.shards[h%connShards]
	sh.mu.Lock()
	head := sh.m[h]
	for e := head; e != nil; e = e.next {
		if e.key != key {
			continue
		}
		if e.n >= l.perKey {
			sh.mu.Unlock()
			return Slot{}, Rejected
		}
		e.n++
		sh.mu.Unlock()
		return Slot{l: l, sh: sh, e: e}, Passed
	}
	cost := nodeCost(connNodeHead + len(key))
	if l.used.Add(cost) > l.budget {
		l.used.Add(-cost)
		sh.mu.Unlock()
		return Slot{}, Rejected
	}
	e := sh.free
	if e != nil {
		sh.free = e.next
	} else {
		e = new(connEntry)
	}
	e.key, e.h, e.n, e.next = key, h, 1, head
	sh.m[h] = e
	sh.mu.Unlock()
	return Slot{l: l, sh: sh, e: e}, Passed
}

// InFlight returns the requests in flight for key.
func (l *ConnLimiter) InFlight(key string) int {
	h := maphash.String(l.seed, key) & l.mask
	sh := &l.shards[h%connShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for e := sh.m[h]; e != nil; e = e.next {
		if e.key == key {
			return int(e.n)
		}
	}
	return 0
}

// Len returns the number of keys in the zone: those with requests in flight.
func (l *ConnLimiter) Len() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		for _, e := range sh.m {
			for ; e != nil; e = e.next {
				n++
			}
		}
		sh.mu.Unlock()
	}
	return n
}

// ZoneBytes returns the bytes of the zone its keys take, by nginx's slab
// model.
func (l *ConnLimiter) ZoneBytes() int64 { return l.used.Load() }

// Busiest returns up to n keys with the most requests in flight, busiest
// first (ties by key); nil only when n < 1. Each shard is read under its own lock, so under load
// the list is a near-snapshot.
func (l *ConnLimiter) Busiest(n int) []KeyCount {
	if n <= 0 {
		return nil
	}
	top := []KeyCount{} // empty, not nil: it is served as JSON
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		for _, e := range sh.m {
			for ; e != nil; e = e.next {
				top = append(top, KeyCount{Key: e.key, InFlight: int(e.n)})
			}
		}
		sh.mu.Unlock()
		if len(top) > 4*n+1024 {
			top = trimBusiest(top, n)
		}
	}
	return trimBusiest(top, n)
}

func trimBusiest(kc []KeyCount, n int) []KeyCount {
	sort.Slice(kc, func(i, j int) bool {
		if kc[i].InFlight != kc[j].InFlight {
			return kc[i].InFlight > kc[j].InFlight
		}
		return kc[i].Key < kc[j].Key
	})
	if len(kc) > n {
		kc = kc[:n:n]
	}
	return kc
}

// add appends a slot taken in this pass.
func (s *Slots) add(sl Slot) {
	if s.n < len(s.small) {
		s.small[s.n] = sl
	} else {
		s.more = append(s.more, sl)
	}
	s.n++
}

// Len returns how many slots s holds.
func (s *Slots) Len() int { return s.n }
