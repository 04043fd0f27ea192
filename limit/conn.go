package limit

import (
	"cmp"
	"hash/maphash"
	"math"
	"slices"
	"strings"
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
// safe for concurrent use, unless Solo made it a single goroutine's. It has
// no clock and starts no goroutines.
type ConnLimiter struct {
	perKey int32
	solo   bool // see Solo
	budget int64
	used   atomic.Int64 // bytes of nodes in the zone; soloUsed instead when solo
	// soloUsed is used when solo: an atomic add is a locked instruction,
	// and a key that comes and goes with each request, as a tenant's with
	// one request in flight at a time, takes two a request.
	soloUsed int64
	seed     maphash.Seed
	mask     uint64 // all ones; tests clear it to make every key's hash collide
	shards   [connShards]connShard
}

type connShard struct {
	mu   sync.Mutex // not taken when solo
	solo bool       // the limiter's solo, beside the lock it spares
	// maxN and minPre bound the shard's entries: none has more requests
	// in flight than maxN or a smaller prefix than minPre. Acquire widens
	// them; AppendBusiest narrows them to the entries it reads, and passes
	// a shard over without reading its entries when they show that none can
	// be among the busiest.
	maxN   int32
	minPre uint64
	// table indexes the entries by key hash. The hash is computed once
	// per Acquire for the shard and the slot alike, and never on Release.
	table table[connEntry, *connEntry]
	free  *connEntry   // recycled entries, so a busy zone costs no allocation
	l     *ConnLimiter // the shard's limiter
	_     [128 - 8 - 8 - 8 - (24 + 8) - 8 - 8]byte
}

type connEntry struct {
	tableEntry
	n    int32
	pre  uint64     // keyPrefix(key), which orders most keys without their bytes
	cost int64      // the entry's bytes in the zone
	sh   *connShard // the shard the entry belongs to, for Release
	next *connEntry // on the free list
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
	l := &ConnLimiter{perKey: int32(perKey), budget: connZoneBudget(zoneBytes), seed: maphash.MakeSeed(), mask: ^uint64(0)}
	for i := range l.shards {
		l.shards[i].table = newTable[connEntry]()
		l.shards[i].l = l
	}
	return l
}

// Solo makes l a single goroutine's: it is no longer safe for concurrent
// use, and its shards are not locked nor its zone's bytes counted with
// atomic instructions. The simulator drives its limiters from one
// goroutine, where two locks and two unlocks a request (an Acquire and its
// Release) were a tenth of a served request's cost at 250 tenants. Call it
// before any other method, from the goroutine that will use l.
func (l *ConnLimiter) Solo() {
	if l.solo {
		return
	}
	l.solo = true
	l.soloUsed = l.used.Load()
	for i := range l.shards {
		l.shards[i].solo = true
	}
}

// lock takes sh's lock unless its limiter is solo.
func (sh *connShard) lock() {
	if !sh.solo {
		sh.mu.Lock()
	}
}

// unlock releases what lock took.
func (sh *connShard) unlock() {
	if !sh.solo {
		sh.mu.Unlock()
	}
}

// reserve adds cost bytes to the zone's and reports whether they fit its
// budget; when they do not, the zone's bytes are as they were.
func (l *ConnLimiter) reserve(cost int64) bool {
	if l.solo {
		if l.soloUsed+cost > l.budget {
			return false
		}
		l.soloUsed += cost
		return true
	}
	if l.used.Add(cost) > l.budget {
		l.used.Add(-cost)
		return false
	}
	return true
}

// unreserve takes cost bytes, which reserve added, off the zone's.
func (l *ConnLimiter) unreserve(cost int64) {
	if l.solo {
		l.soloUsed -= cost
		return
	}
	l.used.Add(-cost)
}

// PerKey returns the limit per key.
func (l *ConnLimiter) PerKey() int { return int(l.perKey) }

// Slot is one request's hold on a ConnLimiter key. The zero Slot holds
// nothing. Release it exactly once; a second Release on the same Slot does
// nothing. Releasing two copies of one Slot releases twice: keep one.
type Slot struct {
	e *connEntry
}

// Held reports whether s holds a slot.
func (s *Slot) Held() bool { return s.e != nil }

// Release frees the slot. The key leaves the zone with its last request.
// Release is not safe to call on the same Slot from two goroutines at once.
func (s *Slot) Release() {
	e := s.e
	if e == nil {
		return
	}
	*s = Slot{}
	sh := e.sh
	sh.lock()
	e.n--
	if e.n > 0 {
		sh.unlock()
		return
	}
	sh.table.delete(e)
	cost := e.cost
	e.key = ""
	e.next = sh.free
	sh.free = e
	sh.unlock()
	sh.l.unreserve(cost)
}

func (l *ConnLimiter) hash(key string) uint64 { return maphash.String(l.seed, key) & l.mask }

// Acquire takes a slot for key. It returns Passed and the slot, Rejected
// when the key already has PerKey requests in flight or is new and the zone
// is full, or Skipped when key is empty or longer than MaxConnKey bytes
// (nginx does not count those). Only Passed returns a slot to release.
func (l *ConnLimiter) Acquire(key string) (Slot, Verdict) {
	if key == "" || len(key) > MaxConnKey {
		return Slot{}, Skipped
	}
	return l.acquire(key, l.hash(key))
}

func (l *ConnLimiter) acquire(key string, h uint64) (Slot, Verdict) {
	sh := &l.shards[h%connShards]
	sh.lock()
	if e := sh.table.find(h, key); e != nil {
		if e.n >= l.perKey {
			sh.unlock()
			return Slot{}, Rejected
		}
		e.n++
		sh.maxN = max(sh.maxN, e.n)
		sh.unlock()
		return Slot{e: e}, Passed
	}
	cost := nodeCost(connNodeHead + len(key))
	if !l.reserve(cost) {
		sh.unlock()
		return Slot{}, Rejected
	}
	e := sh.free
	if e != nil {
		sh.free = e.next
	} else {
		e = &connEntry{sh: sh}
	}
	e.key, e.h, e.n, e.cost, e.next = key, h, 1, cost, nil
	e.pre = keyPrefix(key)
	sh.maxN = max(sh.maxN, 1)
	sh.minPre = min(sh.minPre, e.pre)
	sh.table.insert(e)
	sh.unlock()
	return Slot{e: e}, Passed
}

// InFlight returns the requests in flight for key.
func (l *ConnLimiter) InFlight(key string) int {
	h := l.hash(key)
	sh := &l.shards[h%connShards]
	sh.lock()
	defer sh.unlock()
	if e := sh.table.find(h, key); e != nil {
		return int(e.n)
	}
	return 0
}

// Len returns the number of keys in the zone: those with requests in flight.
func (l *ConnLimiter) Len() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.lock()
		n += sh.table.n
		sh.unlock()
	}
	return n
}

// ZoneBytes returns the bytes of the zone its keys take, by nginx's slab
// model.
func (l *ConnLimiter) ZoneBytes() int64 {
	if l.solo {
		return l.soloUsed
	}
	return l.used.Load()
}

// Busiest returns up to n keys with the most requests in flight, busiest
// first (ties by key); nil only when n < 1. Each shard is read under its
// own lock, so under load the list is a near-snapshot.
func (l *ConnLimiter) Busiest(n int) []KeyCount {
	if n <= 0 {
		return nil
	}
	top := l.AppendBusiest([]KeyCount{}, n) // empty, not nil: it is served as JSON
	return top[:len(top):len(top)]
}

// AppendBusiest appends what Busiest(n) returns to dst and returns the
// extended slice, so that a caller sampling often (the simulator) can reuse
// one buffer.
func (l *ConnLimiter) AppendBusiest(dst []KeyCount, n int) []KeyCount {
	if n <= 0 {
		return dst
	}
	// dst[base:] holds the n busiest keys seen so far as a heap whose least
	// busy key is first, so that most keys cost one comparison of counts
	// with it and only the n kept are sorted: the simulator samples ten
	// keys of thousands many times a run.
	//
	// Once the heap is full, a key that is not busier than its least busy,
	// (least, leastPre, leastKey), is passed over there and then. With many
	// keys at the same count, as a fleet's at its limit_conn, nearly every
	// key ties on its count and is ordered by its bytes: its prefix orders
	// it without reading them (a cache miss each) in most cases.
	//
	// A shard whose bounds (maxN, minPre) show that none of its entries
	// can beat the least busy key of a full heap is passed over without
	// reading its entries. In a zone of some size the shards are read
	// busiest first by their bounds, so that the heap soon holds keys that
	// most shards cannot beat; in a small one ordering them costs more than
	// it saves (a tenth of the simulator's time at 250 tenants, sampling
	// every second). The order of reading changes nothing of the result,
	// the n first keys of one total order.
	base := len(dst)
	least, leastPre, leastKey := 0, uint64(0), ""
	var order [connShards]shardBound
	for i := range order {
		order[i].i = uint8(i)
	}
	if l.ZoneBytes() >= sortedBusiestZone {
		for i := range l.shards {
			sh := &l.shards[i]
			sh.lock()
			order[i].maxN, order[i].minPre = sh.maxN, sh.minPre
			sh.unlock()
		}
		slices.SortFunc(order[:], func(a, b shardBound) int {
			if a.maxN != b.maxN {
				return cmp.Compare(b.maxN, a.maxN)
			}
			return cmp.Compare(a.minPre, b.minPre)
		})
	}
	for _, o := range order {
		sh := &l.shards[o.i]
		sh.lock()
		if len(dst)-base == n {
			// Read again under the lock: another goroutine may have
			// acquired since.
			if c := int(sh.maxN); c < least || c == least && sh.minPre > leastPre {
				sh.unlock()
				continue
			}
		}
		maxN, minPre := int32(0), uint64(math.MaxUint64)
		if sh.table.n > 0 {
			for _, e := range sh.table.slots {
				if e == nil {
					continue
				}
				maxN, minPre = max(maxN, e.n), min(minPre, e.pre)
				if len(dst)-base == n {
					if c := int(e.n); c < least || c == least && (e.pre > leastPre || e.pre == leastPre && e.key > leastKey) {
						continue
					}
				}
				dst = keepBusiest(dst, base, n, KeyCount{Key: e.key, InFlight: int(e.n)})
				if len(dst)-base == n {
					least, leastKey = dst[base].InFlight, dst[base].Key
					leastPre = keyPrefix(leastKey)
				}
			}
		}
		sh.maxN, sh.minPre = maxN, minPre
		sh.unlock()
	}
	slices.SortFunc(dst[base:], compareBusiest)
	return dst
}

// sortedBusiestZone is the zone bytes from which AppendBusiest reads the
// shards in the order of their bounds: 8 keys of up to 28 bytes a shard.
const sortedBusiestZone = 8 * connShards * 64

// shardBound is a shard's bounds as AppendBusiest orders the shards by.
type shardBound struct {
	maxN   int32
	i      uint8
	minPre uint64
}

// keyPrefix returns key's first 8 bytes as a big-endian number, zeros past
// its end: when two keys' prefixes differ, they are in the keys' order.
func keyPrefix(key string) uint64 {
	var p uint64
	for i := range 8 {
		p <<= 8
		if i < len(key) {
			p |= uint64(key[i])
		}
	}
	return p
}

// keepBusiest offers kc to dst[base:], a heap of at most n keys whose least
// busy is first, and returns dst: kc is added while the heap has room, else
// it takes the least busy key's place when it is busier.
func keepBusiest(dst []KeyCount, base, n int, kc KeyCount) []KeyCount {
	if len(dst)-base < n {
		dst = append(dst, kc)
		siftUp(dst[base:], len(dst)-base-1)
		return dst
	}
	if top := dst[base:]; compareBusiest(kc, top[0]) < 0 {
		top[0] = kc
		siftDown(top, 0)
	}
	return dst
}

// siftUp moves h[i] up the heap h, least busy first, to its place.
func siftUp(h []KeyCount, i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if compareBusiest(h[parent], h[i]) > 0 {
			return
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
}

// siftDown moves h[i] down the heap h, least busy first, to its place.
func siftDown(h []KeyCount, i int) {
	for {
		least := i
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(h) && compareBusiest(h[c], h[least]) > 0 {
				least = c
			}
		}
		if least == i {
			return
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
}

// compareBusiest orders keys as Busiest lists them: busiest first, ties by
// key. A limiter's keys are distinct, so the order is total and the n
// busiest are the same keys however they are picked.
func compareBusiest(a, b KeyCount) int {
	if a.InFlight != b.InFlight {
		return cmp.Compare(b.InFlight, a.InFlight)
	}
	return strings.Compare(a.Key, b.Key)
}

// KeyCount is one key's requests in flight.
type KeyCount struct {
	Key      string `json:"key"`
	InFlight int    `json:"in_flight"`
}
