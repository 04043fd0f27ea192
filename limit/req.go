package limit

import (
	"hash/maphash"
	"math"
	"sync"
	"time"
)

// ReqLimiter is nginx's limit_req leaky bucket over a bounded zone.
//
// Per key it keeps the excess (requests above the rate, in
// milli-requests) and the millisecond of the last accounted request. A
// request at now drains rate·ms/1000 from the excess and adds 1000; above
// the burst it is rejected and the state is left as it was; otherwise it is
// admitted, delayed by (excess − delay)·1000/rate ms when the excess is above
// the delay threshold. All arithmetic is nginx's, in integers.
//
// The zone is bounded in bytes like nginx's (see MinZone): a key of up to
// 48 bytes costs 128 bytes, so 10m holds about 81,000 keys. Keys are kept in
// least-recently-used order; inserting a key first expires up to two of the
// oldest keys idle for 60 s and fully drained, and when the zone is still
// full the oldest key is dropped whatever its state; when even that leaves
// no room, the request is rejected. Zones under 1 MiB are one LRU exactly as
// nginx keeps it; larger zones are split into 64 shards by key hash, each
// with 1/64 of the bytes and its own LRU, so which idle key gives way to a
// new one is only approximately nginx's choice.
//
// Use NewReqLimiter; the zero ReqLimiter is not usable. A ReqLimiter is safe
// for concurrent use; it has no clock (every call takes now) and starts no
// goroutines.
type ReqLimiter struct {
	rate   int64 // milli-requests per second
	burst  int64 // milli-requests
	delay  int64 // milli-requests admitted without delay
	seed   maphash.Seed
	mask   uint64 // all ones; tests clear it to make every key's hash collide
	shards []reqShard
}

type reqShard struct {
	mu sync.Mutex
	// table indexes the entries by key hash. It is cheaper than a map
	// here because the hash is computed once, for the shard and the slot
	// alike.
	table  table[reqEntry, *reqEntry]
	lru    reqEntry // sentinel: lru.next is the newest, lru.prev the oldest
	free   *reqEntry
	used   int64
	budget int64
	_      [64]byte
}

type reqEntry struct {
	tableEntry
	excess int64 // milli-requests
	last   int64 // Unix milliseconds of the last accounted request
	// fresh marks a key created by a lookup that did not account it yet;
	// nginx stores last = 0 then, which is "long ago".
	fresh      bool
	count      int32 // lookups in progress that hold the entry
	prev, next *reqEntry
	chain      *reqEntry // on the free list
}

// reqShardsMinZone is the zone size from which a ReqLimiter is sharded.
const reqShardsMinZone = 1 << 20

const reqShards = 64

// NewReqLimiter returns a limit_req with rate in milli-requests per second
// (ParseRate; below 1 is taken as 1), burst requests above the rate, the
// first delay of them admitted without delay (nodelay admits the whole
// burst at once), over a zone of zoneBytes bytes (zero or less means 10m).
// Burst and delay below 0 are taken as 0.
func NewReqLimiter(rate Rate, burst, delay int, nodelay bool, zoneBytes int64) *ReqLimiter {
	clamp := func(n int) int64 { return int64(min(max(n, 0), MaxBurst)) * 1000 }
	l := &ReqLimiter{
		rate:  max(int64(rate), 1),
		burst: clamp(burst),
		delay: clamp(delay),
		seed:  maphash.MakeSeed(),
		mask:  ^uint64(0),
	}
	if nodelay {
		l.delay = NoDelay
	}
	if zoneBytes <= 0 {
		zoneBytes = 10 << 20
	}
	n := 1
	if zoneBytes >= reqShardsMinZone {
		n = reqShards
	}
	budget := reqZoneBudget(zoneBytes) / int64(n)
	l.shards = make([]reqShard, n)
	for i := range l.shards {
		sh := &l.shards[i]
		sh.table = newTable[reqEntry]()
		sh.lru.next, sh.lru.prev = &sh.lru, &sh.lru
		sh.budget = budget
	}
	return l
}

// Rate returns the rate in milli-requests per second.
func (l *ReqLimiter) Rate() Rate { return Rate(l.rate) }

// ReqResult is one ReqLimiter decision.
type ReqResult struct {
	Verdict Verdict       // Passed, Delayed, Rejected or Skipped
	Delay   time.Duration // with Delayed: how long to hold the request
	Excess  int64         // the key's excess in milli-requests (on Rejected: what it would have been)
}

// Allow runs the limit for one request whose key is key at now and accounts
// it. An empty key or one over MaxReqKey bytes is Skipped (not counted, as
// nginx does). A full zone rejects.
func (l *ReqLimiter) Allow(key string, now time.Time) ReqResult {
	if key == "" || len(key) > MaxReqKey {
		return ReqResult{Verdict: Skipped}
	}
	rc, excess, _, _ := l.lookup(key, unixMilli(now), true)
	if rc != lookupOK {
		return ReqResult{Verdict: Rejected, Excess: excess}
	}
	if d := l.delayFor(excess); d > 0 {
		return ReqResult{Verdict: Delayed, Delay: d, Excess: excess}
	}
	return ReqResult{Verdict: Passed, Excess: excess}
}

// delayFor is how long nginx holds a request that leaves excess behind.
func (l *ReqLimiter) delayFor(excess int64) time.Duration {
	if excess <= l.delay {
		return 0
	}
	return time.Duration((excess-l.delay)*1000/l.rate) * time.Millisecond
}

// The results of lookup, after nginx's NGX_OK, NGX_AGAIN, NGX_BUSY and
// NGX_ERROR.
const (
	lookupOK    = iota // accounted
	lookupAgain        // within the burst; held for a later account
	lookupBusy         // over the burst
	lookupFull         // a new key and no room in the zone
)

// lookup finds or creates key's entry at now (Unix ms). With account it
// stores the new excess; without, it only checks the burst and holds the
// entry (count++) for account or unlock to finish.
func (l *ReqLimiter) lookup(key string, now int64, account bool) (int, int64, *reqEntry, *reqShard) {
	h := maphash.String(l.seed, key) & l.mask
	sh := &l.shards[h%uint64(len(l.shards))]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := sh.table.find(h, key); e != nil {
		sh.touch(e)
		ms := e.since(now)
		excess := max(e.excess-leaked(l.rate, ms)+1000, 0)
		if excess > l.burst {
			return lookupBusy, excess, nil, nil
		}
		if !account {
			e.count++
			return lookupAgain, excess, e, sh
		}
		e.excess = excess
		if ms != 0 {
			e.last, e.fresh = now, false
		}
		return lookupOK, excess, nil, nil
	}
	cost := nodeCost(reqNodeHead + len(key))
	sh.expire(now, l.rate, 1)
	if sh.used+cost > sh.budget {
		sh.expire(now, l.rate, 0)
		if sh.used+cost > sh.budget {
			return lookupFull, 0, nil, nil
		}
	}
	e := sh.free
	if e != nil {
		sh.free = e.chain
	} else {
		e = new(reqEntry)
	}
	*e = reqEntry{tableEntry: tableEntry{key: key, h: h}}
	sh.table.insert(e)
	sh.used += cost
	sh.touch(e)
	if account {
		e.last = now
		return lookupOK, 0, nil, nil
	}
	e.fresh, e.count = true, 1
	return lookupAgain, 0, e, sh
}

// account finishes a lookup without accounting, as nginx's
// ngx_http_limit_req_account does for every limit but the last: it drains
// and charges the entry at now and releases the hold.
func (l *ReqLimiter) account(e *reqEntry, sh *reqShard, now int64) int64 {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	ms := e.since(now)
	excess := max(e.excess-leaked(l.rate, ms)+1000, 0)
	if ms != 0 {
		e.last, e.fresh = now, false
	}
	e.excess = excess
	e.count--
	return excess
}

// unlock releases a lookup's hold without accounting it.
func (l *ReqLimiter) unlock(e *reqEntry, sh *reqShard) {
	sh.mu.Lock()
	e.count--
	sh.mu.Unlock()
}

// since is nginx's clamped time since the entry's last request: a clock
// gone back by less than a minute counts as no time, by more as 1 ms.
func (e *reqEntry) since(now int64) int64 {
	if e.fresh {
		return math.MaxInt64
	}
	ms := now - e.last
	switch {
	case ms < -60000:
		return 1
	case ms < 0:
		return 0
	}
	return ms
}

// leaked is rate·ms/1000, saturating instead of overflowing: a key idle
// that long has drained whatever it held.
func leaked(rate, ms int64) int64 {
	if ms > math.MaxInt64/rate {
		return math.MaxInt64 / 2
	}
	return rate * ms / 1000
}

// touch moves e to the front of the LRU (inserting it if new).
func (sh *reqShard) touch(e *reqEntry) {
	if e.prev != nil {
		e.prev.next, e.next.prev = e.next, e.prev
	}
	e.prev, e.next = &sh.lru, sh.lru.next
	sh.lru.next.prev = e
	sh.lru.next = e
}

// expire is nginx's ngx_http_limit_req_expire: n = 1 drops up to two of the
// oldest keys that nobody holds, idle at least 60 s and fully drained; n = 0
// first drops the oldest key nobody holds whatever its state.
func (sh *reqShard) expire(now, rate int64, n int) {
	for n < 3 {
		e := sh.lru.prev
		if e == &sh.lru || e.count != 0 {
			// Lookups bump what they hold to the front; nothing older is free.
			return
		}
		forced := n == 0
		n++
		if !forced {
			ms := int64(math.MaxInt64)
			if !e.fresh {
				ms = now - e.last
				if ms < 0 {
					ms = -ms
				}
			}
			if ms < 60000 {
				return
			}
			if e.excess-leaked(rate, ms) > 0 {
				return
			}
		}
		sh.remove(e)
	}
}

func (sh *reqShard) remove(e *reqEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	sh.table.delete(e)
	sh.used -= nodeCost(reqNodeHead + len(e.key))
	*e = reqEntry{chain: sh.free}
	sh.free = e
}

// Len returns the number of keys in the zone.
func (l *ReqLimiter) Len() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		for e := sh.lru.next; e != &sh.lru; e = e.next {
			n++
		}
		sh.mu.Unlock()
	}
	return n
}

// ZoneBytes returns the bytes of the zone its keys take, by nginx's slab
// model.
func (l *ReqLimiter) ZoneBytes() int64 {
	var n int64
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += sh.used
		sh.mu.Unlock()
	}
	return n
}

// State returns key's stored excess (milli-requests) and the time of its
// last accounted request; ok is false when the key is not in the zone.
func (l *ReqLimiter) State(key string) (excess int64, last time.Time, ok bool) {
	h := maphash.String(l.seed, key) & l.mask
	sh := &l.shards[h%uint64(len(l.shards))]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.table.find(h, key)
	switch {
	case e == nil:
		return 0, time.Time{}, false
	case e.fresh:
		return e.excess, time.Time{}, true
	}
	return e.excess, time.UnixMilli(e.last), true
}

// unixMilli is now in Unix milliseconds, kept within ±2⁶⁰ so that the
// difference of two never overflows.
func unixMilli(now time.Time) int64 {
	const lim = 1 << 60
	return min(max(now.UnixMilli(), -lim), lim)
}
