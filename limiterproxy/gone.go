package limiterproxy

import (
	"context"
	"hash/maphash"
	"net"
	"slices"
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

// shard returns the shard of rk.
func (hs *holders) shard(rk ruleKey) *holderShard {
	hs.seedOnce.Do(func() { hs.seed = maphash.MakeSeed() })
	return &hs.shards[(maphash.String(hs.seed, rk.key)+uint64(rk.rule))%holderShards]
}

// hold registers a request holding slots for keys (one per rule, "" for
// a rule that did not count it) on the connection rc, and returns its
// holder, which the request must give to release when it ends.
func (hs *holders) hold(slots limit.Slots, keys []string, rc syscall.RawConn) *holder {
	h := holderPool.Get().(*holder)
	h.slots, h.rc = slots, rc
	h.released.Store(false)
	h.keys = append(h.keys[:0], keys...)
	for i, k := range h.keys {
		if k != "" {
			rk := ruleKey{i, k}
			sh := hs.shard(rk)
			sh.mu.Lock()
			if sh.byKey == nil {
				sh.byKey = map[ruleKey][]*holder{}
			}
			sh.byKey[rk] = append(sh.byKey[rk], h)
			sh.mu.Unlock()
		}
	}
	return h
}

// release unregisters h and frees its slots unless reap did. Once it
// returns, no reap asks h's connection any more.
func (hs *holders) release(h *holder) {
	for i, k := range h.keys {
		if k == "" {
			continue
		}
		rk := ruleKey{i, k}
		sh := hs.shard(rk)
		sh.mu.Lock()
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
		sh.mu.Unlock()
	}
	if h.released.CompareAndSwap(false, true) {
		h.slots.Release()
	}
	clear(h.keys)
	h.rc, h.slots = nil, limit.Slots{}
	holderPool.Put(h)
}

// rebind makes h's client connection rc (nil: one that cannot be asked),
// as its request moves from one socket to another of the same client.
func (hs *holders) rebind(h *holder, rc syscall.RawConn) {
	var locked []*holderShard
	for i, k := range h.keys {
		if k != "" {
			sh := hs.shard(ruleKey{i, k})
			if !slices.Contains(locked, sh) {
				sh.mu.Lock()
				locked = append(locked, sh)
			}
		}
	}
	h.rc = rc
	for _, sh := range locked {
		sh.mu.Unlock()
	}
}

// reap frees the slots of every holder of key for limit_conn rule whose
// client has closed or reset its connection, and reports whether it freed
// any. It is called only when a request is about to be rejected.
func (hs *holders) reap(rule int, key string) bool {
	freed := false
	rk := ruleKey{rule, key}
	sh := hs.shard(rk)
	sh.mu.Lock()
	for _, h := range sh.byKey[rk] {
		if !h.released.Load() && h.rc != nil && clientGone(h.rc) && h.released.CompareAndSwap(false, true) {
			h.slots.Release()
			freed = true
		}
	}
	sh.mu.Unlock()
	return freed
}
