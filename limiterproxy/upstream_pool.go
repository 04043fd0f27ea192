package limiterproxy

import (
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Defaults of nginx's upstream keepalive module, which ProxyOptions cannot
// change.
const (
	// keepaliveRequests is keepalive_requests: a connection that served
	// this many requests closes.
	keepaliveRequests = 1000
	// keepaliveTimeout is keepalive_timeout: an idle connection closes
	// after it.
	keepaliveTimeout = 60 * time.Second
	// keepaliveTime is keepalive_time: a connection older than this closes
	// when its request ends.
	keepaliveTime = time.Hour
)

// upConn is a connection to the upstream and what the pool knows of it.
type upConn struct {
	net.Conn
	raw      syscall.RawConn  // for the idle check; nil without one
	peek     func(fd uintptr) // the idle check's peek, made once
	usable   bool             // the last peek's finding
	peekBuf  [1]byte
	reused   bool      // it served a request before this one
	requests int       // requests sent on it
	start    time.Time // when it was dialled (with a pool)
	idle     time.Time // when it went idle
	// writeDeadline is set when a write deadline may be left on it.
	writeDeadline bool
}

// idlePool keeps at most max idle connections, as nginx's keepalive module
// caches them: a connection put back goes on top, a request takes the one
// on top (the most recently used), and a connection put back when the
// pool is full closes the one at the bottom (the least recently used). A
// connection idle for timeout closes, as one that the upstream closed or
// sent anything on while idle does when it is next taken: nginx watches
// its idle connections and closes those at once.
//
// A nil *idlePool keeps nothing. It is safe for concurrent use.
type idlePool struct {
	max         int
	timeout     time.Duration // keepalive_timeout
	maxRequests int           // keepalive_requests
	maxAge      time.Duration // keepalive_time
	mu          sync.Mutex
	ring        []*upConn // ring[(head+i)%max], i < n, oldest first
	head, n     int
	timer       *time.Timer // closes the connections idle for timeout
	timerSet    bool
	closedIdle  atomic.Int64 // idle connections closed, for tests
}

// newIdlePool returns a pool of at most max idle connections with
// nginx's default keepalive_timeout, keepalive_requests and keepalive_time.
func newIdlePool(max int) *idlePool {
	p := &idlePool{max: max, timeout: keepaliveTimeout, maxRequests: keepaliveRequests, maxAge: keepaliveTime, ring: make([]*upConn, max)}
	p.timer = time.AfterFunc(time.Hour, p.expire)
	p.timer.Stop()
	return p
}

// get takes the most recently used idle connection that is still usable,
// closing those that are not; nil when there is none.
func (p *idlePool) get() *upConn {
	if p == nil {
		return nil
	}
	for {
		p.mu.Lock()
		if p.n == 0 {
			p.mu.Unlock()
			return nil
		}
		p.n--
		i := (p.head + p.n) % p.max
		c := p.ring[i]
		p.ring[i] = nil
		p.mu.Unlock()
		if idleUsable(c) && time.Since(c.idle) < p.timeout {
			return c
		}
		c.Close()
		p.closedIdle.Add(1)
	}
}

// put makes c idle, closing the least recently used idle connection if
// the pool is full.
func (p *idlePool) put(c *upConn) {
	c.idle = time.Now()
	var evict *upConn
	p.mu.Lock()
	if p.n == p.max {
		evict = p.ring[p.head]
		p.ring[p.head] = nil
		p.head = (p.head + 1) % p.max
		p.n--
	}
	p.ring[(p.head+p.n)%p.max] = c
	p.n++
	if !p.timerSet {
		p.timerSet = true
		p.timer.Reset(p.timeout)
	}
	p.mu.Unlock()
	if evict != nil {
		evict.Close()
		p.closedIdle.Add(1)
	}
}

// expire closes the connections idle for the timeout, oldest first, and
// sets the timer for the next one to be.
func (p *idlePool) expire() {
	var old []*upConn
	p.mu.Lock()
	now := time.Now()
	for p.n > 0 {
		c := p.ring[p.head]
		if left := p.timeout - now.Sub(c.idle); left > 0 {
			p.timer.Reset(left)
			break
		}
		old = append(old, c)
		p.ring[p.head] = nil
		p.head = (p.head + 1) % p.max
		p.n--
	}
	p.timerSet = p.n > 0
	p.mu.Unlock()
	for _, c := range old {
		c.Close()
		p.closedIdle.Add(1)
	}
}

// closeAll closes every idle connection.
func (p *idlePool) closeAll() {
	if p == nil {
		return
	}
	for c := p.get(); c != nil; c = p.get() {
		c.Close()
	}
}
