package limiterproxy

import (
	"context"
	"hash/maphash"
	"net"
	"sync"
	"sync/atomic"
	"syscall"

	"stampede/limit"
)

// nginx sees a client's disconnect in its event loop before it reads a
// request sent after it, so the limit_conn slot that client held is free
// for that request. Go's server learns of a disconnect on a goroutine of
// its own, and the handler of the gone request frees its slots only once
// the proxy has unwound; a busy scheduler may run a newer connection's
// handler first (a freshly accepted connection's goroutine runs next on
// its processor; the disconnected one's reader waits its turn). So before
// the Handler rejects a request, it asks the kernel whether a holder of
// the rejecting key has already been hung up on (holders.reap), which is
// what nginx would have seen first, frees that holder's slots and tries
// again. A client that half-closes its connection counts as gone, as
// nginx finalizes such a request too (proxy_ignore_client_abort off).
//
// A request takes its slots and registers as their holder under the locks
// of its keys' shards of the index, and a release frees the slots and
// unregisters under them, so a reap never meets a slot of its key taken
// without the holder beside it (a holder still registering, or one gone
// from the index with its slot not yet freed, would leave a request
// rejected that nginx admits).

// clientConnKey is the context key of a request's client connection, as
// NewServer's ConnContext stores it.
type clientConnKey struct{}

// withClientConn stores c's raw connection in ctx, for clientGone; a
// connection without one (a pipe, TLS) stores nothing.
func withClientConn(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := c.(*limitConn); ok {
		c = lc.Conn
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return ctx
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return ctx
	}
	return context.WithValue(ctx, clientConnKey{}, rc)
}

// holder is one request holding limit_conn slots, for holders.
type holder struct {
	keys     []string        // the request's limit_conn keys, one per rule
	rc       syscall.RawConn // under the locks of the shards of its keys
	slots    limit.Slots
	released atomic.Bool // its slots are freed, by reap or release
}

var holderPool = sync.Pool{New: func() any { return new(holder) }}

// ruleKey names one key of one limit_conn rule.
type ruleKey struct {
	rule int
	key  string
}

// holderShards is how many locks the holders' index is split over, so
// that requests of different keys (on the epoll server's loops, say)
// seldom wait for one another.
const holderShards = 16

// holders indexes the requests that hold slots, and whose client
// connection can be asked whether it is gone, by rule and key. Its zero
// value is empty; it is safe for concurrent use.
type holders struct {
	seedOnce sync.Once
	seed     maphash.Seed
	shards   [holderShards]holderShard
}

type holderShard struct {
	mu    sync.Mutex
	byKey map[ruleKey][]*holder
}

// shardIndex returns the index of rk's shard.
func (hs *holders) shardIndex(rk ruleKey) int {
	hs.seedOnce.Do(func() { hs.seed = maphash.MakeSeed() })
	return int((maphash.String(hs.seed, rk.key) + uint64(rk.rule)) % holderShards)
}

// shard returns the shard of rk.
func (hs *holders) shard(rk ruleKey) *holderShard { return &hs.shards[hs.shardIndex(rk)] }

// shardSet is a set of the holders' shards, by index: those of one
// request's keys, locked together in index order so that no two lockers
// wait for each other.
type shardSet uint16

// shardsOf returns the shards of keys (one per rule, "" for a rule that
// did not count the request).
func (hs *holders) shardsOf(keys []string) shardSet {
	var set shardSet
	for i, k := range keys {
		if k != "" {
			set |= 1 << hs.shardIndex(ruleKey{i, k})
		}
	}
	return set
}

// lock locks the shards of set.
func (hs *holders) lock(set shardSet) {
	for i := range holderShards {
		if set&(1<<i) != 0 {
			hs.shards[i].mu.Lock()
		}
	}
}

// unlock unlocks the shards of set.
func (hs *holders) unlock(set shardSet) {
	for i := range holderShards {
		if set&(1<<i) != 0 {
			hs.shards[i].mu.Unlock()
		}
	}
}

// holdLocked registers a request holding slots for keys on the
// connection rc, and returns its holder, which the request must give to
// release when it ends. The caller holds the shards of keys (lock), and
// took slots under them, so that no reap ever finds a key's slot taken
// without its holder beside it.
func (hs *holders) holdLocked(slots limit.Slots, keys []string, rc syscall.RawConn) *holder {
	h := holderPool.Get().(*holder)
	h.slots, h.rc = slots, rc
	h.released.Store(false)
	h.keys = append(h.keys[:0], keys...)
	for i, k := range h.keys {
		if k != "" {
			rk := ruleKey{i, k}
			sh := hs.shard(rk)
			if sh.byKey == nil {
				sh.byKey = map[ruleKey][]*holder{}
			}
			sh.byKey[rk] = append(sh.byKey[rk], h)
		}
	}
	return h
}

// release frees h's slots unless reap did, and unregisters h, both under
// the locks of its keys' shards: a reap finds h holding its slots, or
// finds neither. Once it returns, no reap asks h's connection any more.
func (hs *holders) release(h *holder) {
	set := hs.shardsOf(h.keys)
	hs.lock(set)
	if h.released.CompareAndSwap(false, true) {
		h.slots.Release()
	}
	for i, k := range h.keys {
		if k == "" {
			continue
		}
		rk := ruleKey{i, k}
		sh := hs.shard(rk)
		list := sh.byKey[rk]
		for j, o := range list {
			if o == h {
				list[j] = list[len(list)-1]
				list[len(list)-1] = nil
				list = list[:len(list)-1]
				break
			}
		}
		if len(list) == 0 {
			delete(sh.byKey, rk)
		} else {
			sh.byKey[rk] = list
		}
	}
	hs.unlock(set)
	clear(h.keys)
	h.rc, h.slots = nil, limit.Slots{}
	holderPool.Put(h)
}

// rebind makes h's client connection rc (nil: one that cannot be asked),
// as its request moves from one socket to another of the same client.
func (hs *holders) rebind(h *holder, rc syscall.RawConn) {
	set := hs.shardsOf(h.keys)
	hs.lock(set)
	h.rc = rc
	hs.unlock(set)
}

// reap frees the slots of every holder of key for limit_conn rule whose
// client has closed or reset its connection, and reports whether it freed
// any. It is called only when a request is about to be rejected.
func (hs *holders) reap(rule int, key string) bool {
	sh := hs.shard(ruleKey{rule, key})
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return hs.reapLocked(rule, key)
}

// reapLocked is reap for a caller that holds key's shard.
func (hs *holders) reapLocked(rule int, key string) bool {
	freed := false
	rk := ruleKey{rule, key}
	for _, h := range hs.shard(rk).byKey[rk] {
		if !h.released.Load() && h.rc != nil && clientGone(h.rc) && h.released.CompareAndSwap(false, true) {
			h.slots.Release()
			freed = true
		}
	}
	return freed
}
