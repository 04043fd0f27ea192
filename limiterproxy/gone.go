package limiterproxy

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
)

// nginx sees a client's disconnect in its event loop before it reads a
// request sent after it, so the limit_conn slot that client held is free
// for that request. Go's server learns of a disconnect on a goroutine of
// its own, which a busy scheduler may run after a newer connection's
// handler: a freshly accepted connection's goroutine runs next on its
// processor, the disconnected one's reader waits in the global queue. The
// Handler therefore frees a gone client's slots in two ways: when the
// request's context ends (the server noticed), and, before it rejects a
// request, by asking the kernel whether a holder of the rejecting key has
// already been hung up on (holders.reap), which is what nginx would have
// seen first.

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
	prev, next *holder
	keys       []string // the request's limit_conn keys, one per rule
	rc         syscall.RawConn
	slots      Slots
	released   atomic.Bool
}

// free releases the holder's slots; of several callers only the first
// does.
func (h *holder) free() {
	if h.released.CompareAndSwap(false, true) {
		h.slots.Release()
	}
}

// holders lists the requests that hold slots and whose client connection
// can be asked whether it is gone. Its zero value is an empty list; it is
// safe for concurrent use.
type holders struct {
	mu   sync.Mutex
	head holder // sentinel; head.next is the newest
	n    int
}

func (hs *holders) add(h *holder) {
	hs.mu.Lock()
	if hs.head.next == nil {
		hs.head.next, hs.head.prev = &hs.head, &hs.head
	}
	h.prev, h.next = &hs.head, hs.head.next
	hs.head.next.prev = h
	hs.head.next = h
	hs.n++
	hs.mu.Unlock()
}

func (hs *holders) remove(h *holder) {
	hs.mu.Lock()
	h.prev.next, h.next.prev = h.next, h.prev
	h.prev, h.next = nil, nil
	hs.n--
	hs.mu.Unlock()
}

// reap frees the slots of every holder whose key for limit_conn rule is
// key and whose client has closed or reset its connection, and reports
// whether it freed any. The kernel is asked under the list's lock; the
// list is only walked when a request is about to be rejected.
func (hs *holders) reap(rule int, key string) bool {
	var gone []*holder
	hs.mu.Lock()
	if hs.head.next != nil {
		for h := hs.head.next; h != &hs.head; h = h.next {
			if rule < len(h.keys) && h.keys[rule] == key && !h.released.Load() && clientGone(h.rc) {
				gone = append(gone, h)
			}
		}
	}
	hs.mu.Unlock()
	for _, h := range gone {
		h.free()
	}
	return len(gone) > 0
}
