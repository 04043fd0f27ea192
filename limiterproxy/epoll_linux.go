//go:build linux

package limiterproxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"stampede/internal/epoll"
	"stampede/internal/h1"
	"stampede/limit"
)

// EpollServer is `stampede proxy --server epoll`: the Handler and its
// Proxy served in nginx's shape rather than on Go's netpoller. Each of its
// loops holds an OS thread and an epoll instance of its own, with its own
// listening socket (SO_REUSEPORT), client connections and idle upstream
// connections (up to the Proxy's keep-alive N each, as nginx's keepalive
// counts per worker), so that no loop waits on another or takes a lock
// but the limits'. Sockets are non-blocking and edge-triggered, read only
// when epoll said they hold something (internal/epoll; see bench/floorproxy).
//
// A loop serves a request itself (the lean path) when it is a plain
// HTTP/1.1 GET or HEAD without a body, Expect or Upgrade, with a valid
// Host, whose head the Proxy writes itself, to a location whose limit_req
// cannot delay (CannotDelay), and the Proxy's upstream is an IP address.
// It does what the Handler and the Proxy do for it, through their own
// code: the keys, the limit_req and limit_conn stages (Handler.admit), the
// rejection, the upstream request's head, the answer's rewriting
// (Proxy.answer), 502, 504 and the one retry on a reused connection, the
// timeouts, the metrics; and the bytes it writes are the lean server's
// (h1.Responder). A limit_conn slot is held until the response is written
// or the client goes away or only ends its side (EPOLLRDHUP), even with
// its request's head, which closes the upstream connection too, answered
// nothing, as nginx does. An upstream response whose head is not
// plain (chunked, up to the close, informational) or whose body is over
// maxLoopBody continues on a goroutine that streams it.
//
// Every other request, and the rest of its connection, is handed off: the
// connection leaves the loop with the bytes read so far and is served by
// NewLeanServer's server, so that it is answered exactly as `--server h1`
// answers it.
//
// Serve, Shutdown and Close may be called from any goroutine.
type EpollServer struct {
	h     *Handler
	p     *Proxy // h.Next as a lean Proxy; nil when every request is handed off
	hand  *h1.Server
	opts  ServerOptions
	loops int
	// spareP: GOMAXPROCS is above loops, so the loops may wait out of
	// the runtime's sight (see eloop.wait).
	spareP bool
	up     unix.Sockaddr // the Proxy's upstream, nil when it is not an IP address

	conns atomic.Int64 // client connections open, in the loops or handed off
	// Requests served in the loops, connections handed off, exchanges
	// streamed: for tests.
	lean, handed, streamed atomic.Int64

	mu       sync.Mutex
	served   bool
	ls       []*eloop
	closing  bool          // Shutdown or Close was called
	hard     bool          // Close was called
	loopDone chan struct{} // closed when every loop has returned
}

// maxLoopBody bounds the upstream response body a loop holds in memory to
// answer in one write; a longer one is streamed by a goroutine.
const maxLoopBody = 256 << 10

// maxLoopHead bounds a request head a loop reads; a longer one is handed
// off (to be answered 431 or served).
const maxLoopHead = 8 << 10

// NewEpollServer returns the epoll server of h with loops loops (< 1:
// GOMAXPROCS; `stampede proxy` runs one per CPU with GOMAXPROCS one above,
// so that the goroutines beside the loops have a P of their own). opts are as NewLeanServer's, whose server serves what the
// loops hand off (WatchDelay applies to those connections). The loops
// serve requests themselves only when h is a *Handler whose Next is the
// *Proxy NewProxy returns with upstream keep-alive (a connection per
// request is what the loops save least on); for any other h they hand
// every connection off.
func NewEpollServer(h http.Handler, opts ServerOptions, loops int) (*EpollServer, error) {
	if loops < 1 {
		loops = runtime.GOMAXPROCS(0)
	}
	s := &EpollServer{hand: NewLeanServer(h, opts), opts: opts.withDefaults(), loops: loops, spareP: runtime.GOMAXPROCS(0) > loops}
	hh, ok := h.(*Handler)
	if !ok {
		return s, nil
	}
	s.h = hh
	if p, ok := hh.Next.(*Proxy); ok && p.keepAlive && p.lean && p.t.addr.IsValid() && p.t.dial == nil {
		s.p = p
		a := p.t.addr
		if a.Addr().Is4() || a.Addr().Is4In6() {
			s.up = &unix.SockaddrInet4{Port: int(a.Port()), Addr: a.Addr().Unmap().As4()}
		} else {
			s.up = &unix.SockaddrInet6{Port: int(a.Port()), Addr: a.Addr().As16()}
		}
	}
	return s, nil
}

// ListenReusePort is Listen with SO_REUSEPORT set on the socket, so that
// an EpollServer's loops each listen on a socket of their own on its
// port, and the kernel spreads new connections over them.
func ListenReusePort(addr string, opts ServerOptions) (net.Listener, error) {
	opts = opts.withDefaults()
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	// A port of 0 the kernel picks may be one in use, which a socket
	// with SO_REUSEPORT is refused (EADDRINUSE): it picks again.
	for try := 0; err != nil && errors.Is(err, unix.EADDRINUSE) && try < 20 && strings.HasSuffix(addr, ":0"); try++ {
		ln, err = lc.Listen(context.Background(), "tcp", addr)
	}
	if err != nil {
		return nil, listenError(addr, err)
	}
	return LimitListener(ln, opts.MaxConns), nil
}

// Serve serves the connections of ln, a TCP listener (as Listen or
// ListenReusePort return), in the loops until Shutdown or Close, and then
// returns http.ErrServerClosed. With SO_REUSEPORT on ln each loop but the
// first listens on a socket of its own; without, they share ln's.
func (s *EpollServer) Serve(ln net.Listener) error {
	fd, addr, err := listenerFD(ln)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.served || s.closing {
		s.mu.Unlock()
		unix.Close(fd) //nolint:errcheck
		return http.ErrServerClosed
	}
	s.served = true
	s.loopDone = make(chan struct{})
	// Each loop a socket of its own on ln's port, the first ln's own; if
	// ln has no SO_REUSEPORT, they all share ln's.
	lfds := []int{fd}
	for len(lfds) < s.loops {
		lfd, err := epoll.Listen(addr)
		if err != nil {
			break
		}
		lfds = append(lfds, lfd)
	}
	shared := len(lfds) < s.loops
	if shared {
		for _, lfd := range lfds[1:] {
			unix.Close(lfd) //nolint:errcheck
		}
		lfds = lfds[:1]
	}
	for i := range s.loops {
		lfd, own := fd, false
		if !shared {
			lfd, own = lfds[i], i > 0
		}
		l, err := newEpollLoop(s, lfd, own, shared)
		if err != nil {
			for _, l := range s.ls {
				l.closeAll()
				unix.Close(l.wake) //nolint:errcheck
			}
			if !shared {
				for _, lfd := range lfds[i+1:] {
					unix.Close(lfd) //nolint:errcheck
				}
			}
			s.ls = nil
			s.mu.Unlock()
			unix.Close(fd) //nolint:errcheck
			return err
		}
		s.ls = append(s.ls, l)
	}
	ls := s.ls
	s.mu.Unlock()

	errc := make(chan error, len(ls))
	for _, l := range ls {
		go func() { errc <- l.run() }()
	}
	var first error
	for range ls {
		if err := <-errc; err != nil && first == nil {
			first = err
			s.Close() //nolint:errcheck // stop the other loops
		}
	}
	unix.Close(fd) //nolint:errcheck
	s.mu.Lock()
	for _, l := range ls {
		unix.Close(l.wake) //nolint:errcheck
		l.wake = -1
	}
	s.mu.Unlock()
	close(s.loopDone)
	if first != nil {
		return first
	}
	return http.ErrServerClosed
}

// listenerFD returns a duplicate of ln's socket, non-blocking, and its
// address.
func listenerFD(ln net.Listener) (int, unix.Sockaddr, error) {
	if l, ok := ln.(*limitListener); ok {
		ln = l.Listener
	}
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return -1, nil, fmt.Errorf("epoll server: listener %T has no socket", ln)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, nil, fmt.Errorf("epoll server: %w", err)
	}
	fd := -1
	var derr error
	if err := rc.Control(func(f uintptr) { fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, nil, fmt.Errorf("epoll server: %w", err)
	}
	if derr != nil {
		return -1, nil, fmt.Errorf("epoll server: dup listener: %w", derr)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd) //nolint:errcheck
		return -1, nil, fmt.Errorf("epoll server: getsockname: %w", err)
	}
	return fd, sa, nil
}

// Lean reports whether the loops serve requests themselves; false when
// they hand every connection off (see NewEpollServer).
func (s *EpollServer) Lean() bool { return s.p != nil }

// InUse reports the client connections open now, in the loops or handed
// off; for tests and metrics.
func (s *EpollServer) InUse() int { return int(s.conns.Load()) }

// Shutdown stops accepting, closes idle connections, lets the requests in
// flight finish (in the loops and handed off) and returns, or returns
// ctx's error once ctx is done first.
func (s *EpollServer) Shutdown(ctx context.Context) error {
	done := s.stop(false)
	herr := s.hand.Shutdown(ctx)
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return herr
}

// Close closes every connection at once.
func (s *EpollServer) Close() error {
	s.stop(true)
	return s.hand.Close()
}

// stop tells the loops to drain (hard: to close everything) and returns
// the channel closed when they have returned, nil if Serve never ran.
func (s *EpollServer) stop(hard bool) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	s.hard = s.hard || hard
	one := []byte{1, 0, 0, 0, 0, 0, 0, 0} // eventfd adds a native-endian uint64
	for _, l := range s.ls {
		if l.wake >= 0 {
			unix.Write(l.wake, one) //nolint:errcheck // a full counter wakes it all the same
		}
	}
	return s.loopDone
}

func (s *EpollServer) stopping() (closing, hard bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing, s.hard
}

// epoch is the loops' clock's zero: they keep time as the monotonic
// nanoseconds since it.
var epoch = time.Now()

func monoNow() int64 { return int64(time.Since(epoch)) }

// eloop is one event loop; only its own goroutine touches it.
type eloop struct {
	s         *EpollServer
	poll      epoll.Poller // the loop's epoll instance (Fd -1 once closed) and its events
	ln        int
	wake      int
	up        unix.Sockaddr // the upstream, the loop's own copy
	shared    bool          // ln is the listener the loops share (EPOLLEXCLUSIVE)
	ownLn     bool          // ln is the loop's to close
	listening bool          // ln is in the epoll set
	idle      []*econn      // idle upstream connections, the last the most recently used
	conns     []*econn      // by fd; nil for none
	clients   int           // client connections in the loop
	now       int64         // monoNow at the last wake-up
	next      int64         // the earliest deadline, 0 for none
	retry     int64         // when to try accepting again after too many connections, 0 if not waiting
	draining  bool
	responder *h1.Responder
	rec       recorder
	br, ubr   *bufio.Reader
	rd, urd   bytes.Reader
	plain     http.Response
	known     knownBody
	out       sliceWriter
	oneByte   [1]byte

	// The request being answered and what answers it, for the answer
	// functions made once (answerFn, errorFn, replayFn), which would
	// otherwise be closures made per request.
	cur                         *econn
	curResp                     *http.Response
	curErr                      error
	gw                          guardWriter
	answerFn, errorFn, replayFn func(w http.ResponseWriter)
}

// newEpollLoop makes a loop accepting on ln, which it closes at its end
// if own says it is its own.
func newEpollLoop(s *EpollServer, ln int, own, shared bool) (*eloop, error) {
	l := &eloop{s: s, poll: epoll.Poller{Fd: -1}, ln: ln, ownLn: own, wake: -1, shared: shared}
	// A Sockaddr holds the raw form it passes to the kernel, written at
	// each connect: each loop has its own.
	switch a := s.up.(type) {
	case *unix.SockaddrInet4:
		up := *a
		l.up = &up
	case *unix.SockaddrInet6:
		up := *a
		l.up = &up
	}
	l.responder = h1.NewResponder(s.hand)
	l.br = bufio.NewReaderSize(nil, maxLoopHead)
	l.ubr = bufio.NewReaderSize(nil, 4<<10)
	l.rec.hdr = make(http.Header, 4)
	l.answerFn = func(w http.ResponseWriter) {
		l.dryRun(w)
		l.guarded(w, func(w http.ResponseWriter) { l.s.p.answer(w, l.cur.req, l.curResp) })
	}
	l.errorFn = func(w http.ResponseWriter) {
		l.dryRun(w)
		l.guarded(w, func(w http.ResponseWriter) { proxyError(w, l.cur.req, l.curErr) })
	}
	l.replayFn = l.rec.replay
	fail := func(what string, err error) (*eloop, error) {
		l.closeAll()
		if l.wake >= 0 {
			unix.Close(l.wake) //nolint:errcheck
		}
		return nil, fmt.Errorf("epoll server: %s: %w", what, err)
	}
	var err error
	if l.poll.Fd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return fail("epoll_create1", err)
	}
	if l.wake, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return fail("eventfd", err)
	}
	if err = unix.EpollCtl(l.poll.Fd, unix.EPOLL_CTL_ADD, l.wake, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(l.wake)}); err != nil {
		return fail("epoll_ctl", err)
	}
	if err = l.listen(true); err != nil {
		return fail("epoll_ctl listener", err)
	}
	return l, nil
}

// listen adds the listener to the epoll set, or takes it out.
func (l *eloop) listen(on bool) error {
	if on == l.listening || l.ln < 0 {
		return nil
	}
	var err error
	if on {
		// Level-triggered: the backlog is drained a bounded number at a
		// time. A shared listener wakes one loop per connection.
		ev := uint32(unix.EPOLLIN)
		if l.shared {
			ev |= unix.EPOLLEXCLUSIVE
		}
		err = unix.EpollCtl(l.poll.Fd, unix.EPOLL_CTL_ADD, l.ln, &unix.EpollEvent{Events: ev, Fd: int32(l.ln)})
	} else {
		err = unix.EpollCtl(l.poll.Fd, unix.EPOLL_CTL_DEL, l.ln, nil)
	}
	if err == nil {
		l.listening = on
	}
	return err
}

// closeAll closes the loop's connections, its own listener and its epoll
// instance (not its wake-up fd, which stop may still write to).
func (l *eloop) closeAll() {
	for _, c := range l.conns {
		if c != nil && !c.closed {
			if c.upstream {
				l.closeUp(c)
			} else {
				l.closeClient(c)
			}
		}
	}
	l.conns, l.idle = nil, nil
	if l.ln >= 0 && l.ownLn {
		unix.Close(l.ln) //nolint:errcheck
	}
	l.ln = -1
	if l.poll.Fd >= 0 {
		unix.Close(l.poll.Fd) //nolint:errcheck
	}
	l.poll.Fd = -1
}

// run waits for events and handles them until the server stops.
func (l *eloop) run() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer l.closeAll()
	for {
		n, err := l.wait()
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("epoll server: epoll_wait: %w", err)
		}
		l.now = monoNow()
		for _, ev := range l.poll.Events[:n] {
			switch fd := int(ev.Fd); {
			case fd == l.wake:
				var b [8]byte
				unix.Read(l.wake, b[:]) //nolint:errcheck // level-triggered: emptied so it stops waking
				if done := l.stopNow(); done {
					return nil
				}
			case fd == l.ln && l.listening:
				if err := l.accept(); err != nil {
					return err
				}
			case fd < len(l.conns) && l.conns[fd] != nil && l.conns[fd].seq == uint32(ev.Pad):
				// A connection closed earlier in this batch may have had
				// its fd given to a new one: seq tells them apart.
				l.event(l.conns[fd], ev.Events)
			}
		}
		if l.next != 0 && l.now >= l.next || l.retry != 0 && l.now >= l.retry {
			l.timers()
		}
		if l.draining && l.clients == 0 {
			return nil
		}
	}
}

// stopNow acts on the server's stop: a hard one closes everything, a
// shutdown stops accepting and closes idle clients. It reports whether
// the loop is done.
func (l *eloop) stopNow() bool {
	closing, hard := l.s.stopping()
	if !closing {
		return false
	}
	if hard {
		return true
	}
	l.draining = true
	l.listen(false) //nolint:errcheck
	l.retry = 0
	for _, c := range l.conns {
		if c != nil && !c.upstream && c.state == clientReading && c.start == len(c.In) {
			l.closeClient(c)
		}
	}
	return l.clients == 0
}

// wait is epoll_wait through RawSyscall, which the runtime does not see
// (no P handed off, no wake-up of sysmon; see bench/floorproxy). When the
// process has a P beside the loops' (GOMAXPROCS above the loops), the
// other goroutines (the connections handed off) run there, and a loop
// waits so for up to 10 ms at a time, so that a stop-the-world never
// waits longer on it. Otherwise it only looks so, and when nothing is
// there waits through Syscall, its P serving the other goroutines
// meanwhile.
func (l *eloop) wait() (int, error) {
	ms := -1
	if t := l.deadline(); t != 0 {
		ms = int((t-monoNow())/int64(time.Millisecond)) + 1
		ms = max(ms, 0)
	}
	look := 0
	if l.s.spareP {
		look = 10
		if ms >= 0 && ms < look {
			look = ms
		}
	}
	n, err := l.poll.WaitRaw(look)
	if n > 0 || l.s.spareP || err != nil {
		return n, err
	}
	return l.poll.Wait(ms)
}

// deadline is the next time the loop must wake up by itself, 0 for none.
func (l *eloop) deadline() int64 {
	t := l.next
	if l.retry != 0 && (t == 0 || l.retry < t) {
		t = l.retry
	}
	return t
}

// setDeadline sets c's deadline to d from now (0: none).
func (l *eloop) setDeadline(c *econn, d time.Duration) {
	if d <= 0 {
		c.deadline = 0
		return
	}
	c.deadline = l.now + int64(d)
	if l.next == 0 || c.deadline < l.next {
		l.next = c.deadline
	}
}

// timers acts on the deadlines that passed and finds the next.
func (l *eloop) timers() {
	if l.retry != 0 && l.now >= l.retry {
		l.retry = 0
		l.listen(true) //nolint:errcheck
	}
	l.next = 0
	for _, c := range l.conns {
		if c == nil || c.closed || c.deadline == 0 {
			continue
		}
		if c.deadline <= l.now {
			c.deadline = 0
			l.expired(c)
			continue
		}
		if l.next == 0 || c.deadline < l.next {
			l.next = c.deadline
		}
	}
}

// expired acts on c's deadline.
func (l *eloop) expired(c *econn) {
	if !c.upstream {
		// client_header_timeout or keepalive_timeout: closed without an
		// answer, as the lean server closes it.
		if c.state == clientReading {
			l.closeClient(c)
		}
		return
	}
	switch {
	case c.peer == nil:
		l.dropIdle(c) // keepalive_timeout of an idle upstream connection
	case c.connecting:
		l.upstreamFailed(c, errConnectTimeout)
	case c.headLen == 0:
		c.timedOut = true
		l.upstreamFailed(c, errHeaderTimeout)
	default:
		// proxy_read_timeout between two reads of the body: the response
		// is cut off.
		c.timedOut = true
		l.deliver(c)
	}
}

// errConnectTimeout is proxy_connect_timeout running out.
var errConnectTimeout error = connectTimeoutError{}

type connectTimeoutError struct{}

func (connectTimeoutError) Error() string   { return "upstream connect timed out" }
func (connectTimeoutError) Timeout() bool   { return true }
func (connectTimeoutError) Temporary() bool { return true }

// accept takes up to 64 new clients off the listener's backlog.
func (l *eloop) accept() error {
	for range 64 {
		if l.s.conns.Load() >= int64(l.s.opts.MaxConns) {
			// As many connections as allowed: wait in the backlog, as
			// Listen's listener makes them wait.
			l.listen(false) //nolint:errcheck
			l.retry = l.now + int64(10*time.Millisecond)
			return nil
		}
		fd, sa, err := unix.Accept4(l.ln, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		switch err {
		case nil:
		case unix.EAGAIN:
			return nil
		case unix.EINTR, unix.ECONNABORTED:
			continue
		case unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM:
			l.listen(false) //nolint:errcheck
			l.retry = l.now + int64(10*time.Millisecond)
			return nil
		default:
			return fmt.Errorf("epoll server: accept: %w", err)
		}
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1) //nolint:errcheck
		c, err := l.add(fd, false)
		if err != nil {
			return err
		}
		l.s.conns.Add(1)
		l.clients++
		c.WriteReady = true
		c.first = true
		c.remote = sockaddrString(sa)
		l.setDeadline(c, l.s.opts.ReadHeaderTimeout)
	}
	return nil
}

// sockaddrString is sa as net.TCPAddr.String writes it.
func sockaddrString(sa unix.Sockaddr) string {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port)).String()
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr).Unmap(), uint16(a.Port)).String()
	}
	return ""
}

// add registers fd, edge-triggered for both directions.
func (l *eloop) add(fd int, upstream bool) (*econn, error) {
	seq, err := l.poll.Add(fd)
	if err != nil {
		unix.Close(fd) //nolint:errcheck
		return nil, fmt.Errorf("epoll server: epoll_ctl add: %w", err)
	}
	c := &econn{Conn: epoll.Conn{Fd: fd}, seq: seq, upstream: upstream, length: -1}
	if upstream {
		c.In = make([]byte, 0, 4<<10)
	} else {
		c.In = make([]byte, 0, 2<<10)
	}
	for len(l.conns) <= fd {
		l.conns = append(l.conns, nil)
	}
	l.conns[fd] = c
	return c, nil
}

// forget takes c out of the loop, leaving its fd open.
func (l *eloop) forget(c *econn) {
	unix.EpollCtl(l.poll.Fd, unix.EPOLL_CTL_DEL, c.Fd, nil) //nolint:errcheck
	if l.conns[c.Fd] == c {
		l.conns[c.Fd] = nil
	}
	c.closed = true
}

// The states of a client connection.
const (
	clientReading = iota // waiting for a whole request head
	clientWaiting        // its request is upstream
	clientWriting        // its response is being written
)

// econn is a client or an upstream connection.
type econn struct {
	// The socket, its readiness and its buffers: In is read and not yet
	// consumed from start, Out is to write.
	epoll.Conn
	seq      uint32
	upstream bool
	closed   bool

	start    int
	peer     *econn
	deadline int64 // monoNow by which the loop acts on c; 0 for none

	// Client connections.
	state  int
	first  bool // no request read yet: client_header_timeout, not keepalive_timeout
	keep   bool // the connection carries the next request
	remote string
	req    *http.Request
	fwd    *forward
	a      admission
	dry    []string // the dry-run limits that would have rejected the request
	abort  bool     // close once the response is written (it was cut off)

	// Upstream connections.
	connecting bool
	reused     bool
	requests   int
	born       int64
	headLen    int // the response head's length once it is whole
	length     int // its body's length; -1 until the head is whole
	timedOut   bool
}

// fdConn is a client's socket as syscall.RawConn, for holders.reap to ask
// whether the client is gone. The loop gives up a holder before it closes
// the fd, and reap asks under the holders' lock, so the fd it peeks at is
// still the client's.
type fdConn int

func (fd fdConn) Control(f func(fd uintptr)) error { f(uintptr(fd)); return nil }
func (fdConn) Read(func(fd uintptr) bool) error    { return errors.ErrUnsupported }
func (fdConn) Write(func(fd uintptr) bool) error   { return errors.ErrUnsupported }

// event records what epoll said of c and moves c on.
func (l *eloop) event(c *econn, ev uint32) {
	c.Note(ev)
	if c.upstream {
		l.driveUpstream(c)
	} else {
		l.driveClient(c)
	}
}

// driveClient moves client c on as far as it can go without waiting.
func (l *eloop) driveClient(c *econn) {
	for !c.closed {
		switch c.state {
		case clientWriting:
			done, err := c.Flush()
			if err != nil {
				l.closeClient(c)
				return
			}
			if !done {
				return
			}
			// The response is written: the request ends, its slots free.
			c.a.end(l.s.h)
			c.req, c.dry = nil, c.dry[:0]
			if !c.keep || c.abort || l.draining {
				l.closeClient(c)
				return
			}
			c.state = clientReading
			c.first = false
			l.setDeadline(c, l.s.opts.IdleTimeout)
		case clientReading:
			if !l.readRequest(c) {
				return
			}
		case clientWaiting:
			if c.EOF {
				// The client is gone, or half-closed, which nginx takes
				// as gone too, even when the end came with the request's
				// head (ngx_http_upstream_init_request checks the client
				// once the request is on its way): the request ends,
				// answered nothing, its upstream connection closed.
				l.closeClient(c)
			}
			return
		default:
			return
		}
	}
}

// readRequest reads c's next request head and serves it or hands c off;
// it reports whether driveClient should go on.
func (l *eloop) readRequest(c *econn) bool {
	end := h1.HeadEnd(c.In[c.start:])
	for end < 0 {
		if !c.ReadReady {
			return false
		}
		if c.start > 0 {
			c.In = c.In[:copy(c.In, c.In[c.start:])]
			c.start = 0
		}
		if len(c.In) == cap(c.In) {
			if cap(c.In) >= maxLoopHead {
				l.handOff(c) // a head the lean server bounds and answers
				return false
			}
			c.In = append(c.In, 0)[:len(c.In)]
		}
		before := len(c.In)
		n, err := c.Fill()
		if err != nil {
			if len(c.In) > 0 {
				l.handOff(c) // a partial head and the end: as the lean server answers it
			} else {
				l.closeClient(c)
			}
			return false
		}
		if n == 0 {
			return false
		}
		if before == 0 && !c.first {
			// A request's first byte after keepalive_timeout's wait:
			// client_header_timeout bounds the rest.
			l.setDeadline(c, l.s.opts.ReadHeaderTimeout)
		}
		end = h1.HeadEnd(c.In[c.start:])
	}
	c.deadline = 0
	head := c.In[c.start : c.start+end]
	r, ok := l.leanRequest(c, head)
	if !ok {
		l.handOff(c)
		return false
	}
	if c.start += end; c.start == len(c.In) {
		c.In, c.start = c.In[:0], 0
	}
	c.req = r
	c.keep = !r.Close
	if l.draining {
		c.keep = false
	}
	l.serve(c)
	return true
}

// leanRequest parses head, a whole request head, and returns the request
// when a loop serves it itself (see EpollServer).
func (l *eloop) leanRequest(c *econn, head []byte) (*http.Request, bool) {
	s := l.s
	if s.p == nil {
		return nil, false
	}
	l.rd.Reset(head)
	l.br.Reset(&l.rd)
	l.br.Peek(len(head)) //nolint:errcheck // fills the buffer from the bytes
	r, ok := h1.ParsePlainRequest(l.br)
	l.br.Reset(nil)
	if !ok || r.ProtoMinor != 1 || r.Method != http.MethodGet && r.Method != http.MethodHead || r.RequestURI == "*" {
		return nil, false
	}
	if st, _ := h1.CheckRequest(r); st != 0 {
		return nil, false
	}
	if r.Host == "" || !limit.ValidHost(r.Host) {
		return nil, false
	}
	if _, ok := r.Header["Expect"]; ok {
		return nil, false
	}
	if p := s.h.Policy; p != nil && !CannotDelay(p.For(r.URL.Path)) {
		return nil, false
	}
	r.RemoteAddr = c.remote
	f := forwards.Get().(*forward)
	if !f.head(s.p, r) {
		f.put()
		return nil, false
	}
	c.fwd = f
	return r, true
}

// serve runs c's request through the limits and sends it upstream, or
// answers it.
func (l *eloop) serve(c *econn) {
	h := l.s.h
	r := c.req
	l.s.lean.Add(1)
	if h.Policy != nil {
		l.rec.reset()
		if !h.admit(&c.a, &l.rec, r, fdConn(c.Fd), nil) {
			c.fwd.put()
			c.fwd = nil
			c.a.end(h)
			l.respond(c, l.replayFn)
			return
		}
		c.dry = append(c.dry[:0], l.rec.hdr[DryRunHeader]...)
	}
	c.state = clientWaiting
	l.forward(c)
}

// respond makes c's response with serve, as the lean server would write
// it, and starts writing it.
func (l *eloop) respond(c *econn, serve func(w http.ResponseWriter)) {
	l.out.b = c.Out[:0]
	if l.draining {
		// As the lean server answers once it is shutting down.
		c.req.Close = true
	}
	keep, aborted := l.responder.Respond(&l.out, c.req, serve)
	c.Out, c.Sent = l.out.b, 0
	l.out.b = nil
	c.keep = c.keep && keep
	c.abort = aborted
	c.state = clientWriting
}

// forward sends c's request on an idle upstream connection, or a new one.
func (l *eloop) forward(c *econn) {
	var u *econn
	for len(l.idle) > 0 {
		n := len(l.idle)
		u = l.idle[n-1]
		l.idle = l.idle[:n-1]
		if l.now-u.born < int64(l.s.p.t.pool.maxAge) && !u.EOF && !u.ReadReady {
			break
		}
		l.closeUp(u)
		u = nil
	}
	if u != nil {
		u.reused = true
	} else {
		var err error
		if u, err = l.dial(); err != nil {
			l.answerError(c, err)
			return
		}
	}
	u.requests++
	u.Out, u.Sent = c.fwd.buf, 0
	u.In, u.headLen, u.length, u.timedOut = u.In[:0], 0, -1, false
	u.peer, c.peer = c, u
	u.deadline = 0
	if u.connecting {
		l.setDeadline(u, l.s.p.t.dialer.Timeout)
	}
	l.driveUpstream(u)
}

// dial opens a new upstream connection; the connect completes in the loop.
func (l *eloop) dial() (*econn, error) {
	fd, connecting, err := epoll.Dial(l.up)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: err}
	}
	u, err := l.add(fd, true)
	if err != nil {
		return nil, err
	}
	u.connecting = connecting
	u.WriteReady = !connecting
	u.born = l.now
	return u, nil
}

// driveUpstream moves upstream connection u on as far as it can go
// without waiting.
func (l *eloop) driveUpstream(u *econn) {
	if u.peer == nil {
		// Idle: an event now means the upstream closed it or sent
		// something unasked; nginx closes it then.
		if u.ReadReady || u.EOF {
			if u.EOF {
				l.dropIdle(u)
				return
			}
			_, err := epoll.Sys(unix.SYS_READ, u.Fd, l.oneByte[:]) // a peek would leave it readable
			if err != unix.EAGAIN {
				l.dropIdle(u)
				return
			}
			u.ReadReady = false
		}
		return
	}
	if u.connecting {
		if !u.WriteReady {
			return
		}
		if err := u.ConnectError(); err != nil {
			l.upstreamFailed(u, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", err)})
			return
		}
		u.connecting = false
		u.deadline = 0
	}
	if len(u.Out) > 0 {
		done, err := u.Flush()
		if err != nil {
			l.upstreamFailed(u, &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", err)})
			return
		}
		if !done {
			return
		}
		// The request is written: proxy_read_timeout runs from here to
		// the whole head, and trickling bytes do not re-arm it.
		l.setDeadline(u, l.s.p.t.readTimeout)
	}
	for {
		if u.headLen == 0 {
			if end := h1.HeadEnd(u.In); end >= 0 {
				length, ok := loopFraming(u.In[:end], u.peer.req)
				if !ok || length > maxLoopBody {
					l.streamUp(u)
					return
				}
				u.headLen, u.length = end, length
				if cap(u.In) < end+length {
					in := make([]byte, len(u.In), end+length)
					copy(in, u.In)
					u.In = in
				}
			} else if len(u.In) >= maxUpstreamHeader {
				l.upstreamFailed(u, errUpstreamHeader)
				return
			}
		}
		if u.headLen > 0 && len(u.In) >= u.headLen+u.length {
			l.deliver(u)
			return
		}
		if !u.ReadReady {
			return
		}
		if len(u.In) == cap(u.In) {
			u.In = append(u.In, 0)[:len(u.In)] // a head longer than the buffer: grow
		}
		n, err := u.Fill()
		if err != nil {
			if u.headLen > 0 {
				l.deliver(u) // cut off mid-body
				return
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			} else {
				err = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", err)}
			}
			l.upstreamFailed(u, err)
			return
		}
		if n == 0 {
			return
		}
		if u.headLen > 0 && l.s.p.t.readTimeout > 0 {
			// Each wait for more of the body is bounded anew.
			l.setDeadline(u, l.s.p.t.readTimeout)
		}
	}
}

// loopFraming reads the framing of the response head b (blank line
// included) to req, as far as the loop holds it whole: HTTP/1.x with a
// final status, a single Content-Length or none by the status or the
// method, no Transfer-Encoding. It returns the body's bytes on the wire;
// false for any other head, which streamUp reads as the Proxy reads it.
func loopFraming(b []byte, req *http.Request) (int, bool) {
	if len(b) < len("HTTP/1.1 200\r\n\r\n") || string(b[:7]) != "HTTP/1." || b[8] != ' ' {
		return 0, false
	}
	code := 0
	for _, d := range b[9:12] {
		if d < '0' || d > '9' {
			return 0, false
		}
		code = code*10 + int(d-'0')
	}
	if code < 200 || code > 599 {
		return 0, false
	}
	length := -1
	rest := b[bytes.IndexByte(b, '\n')+1:]
	for len(rest) > 2 {
		eol := bytes.IndexByte(rest, '\n')
		if eol < 0 {
			return 0, false
		}
		line := rest[:eol]
		rest = rest[eol+1:]
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return 0, false
		}
		name := line[:colon]
		switch {
		case h1.EqualFold(name, "content-length"):
			if length >= 0 {
				return 0, false
			}
			v := bytes.Trim(line[colon+1:], " \t\r")
			if len(v) == 0 || len(v) > 12 {
				return 0, false
			}
			length = 0
			for _, d := range v {
				if d < '0' || d > '9' {
					return 0, false
				}
				length = length*10 + int(d-'0')
			}
		case h1.EqualFold(name, "transfer-encoding"):
			return 0, false
		}
	}
	if req.Method == http.MethodHead || code == http.StatusNoContent || code == http.StatusNotModified {
		return 0, true
	}
	return length, length >= 0
}

// deliver answers u's client with the response u holds (whole, or cut
// off by the upstream's close or the read timeout), and keeps u if it can
// serve another request.
func (l *eloop) deliver(u *econn) {
	c := u.peer
	u.peer, c.peer = nil, nil
	u.deadline, u.Out, u.Sent = 0, nil, 0
	r := c.req
	l.urd.Reset(u.In)
	l.ubr.Reset(&l.urd)
	resp, err := readResponse(l.ubr, r, &l.plain, &l.known)
	whole := u.headLen > 0 && len(u.In) == u.headLen+u.length
	keep := err == nil && whole && !u.timedOut && !resp.Close && resp.ProtoAtLeast(1, 1) &&
		u.requests < l.s.p.t.pool.maxRequests && l.now-u.born < int64(l.s.p.t.pool.maxAge)
	if err != nil {
		l.respondError(c, err)
	} else {
		l.cur, l.curResp = c, resp
		l.respond(c, l.answerFn)
		l.cur, l.curResp = nil, nil
		if l.ubr.Buffered() > 0 || l.urd.Len() > 0 {
			keep = false
		}
	}
	l.ubr.Reset(nil)
	l.urd.Reset(nil)
	l.release(c)
	if keep {
		l.putIdle(u)
	} else {
		l.closeUp(u)
	}
	l.driveClient(c)
}

// release gives c's forward back.
func (l *eloop) release(c *econn) {
	if c.fwd != nil {
		c.fwd.put()
		c.fwd = nil
	}
}

// dryRun adds the dry-run limits that would have rejected the request
// being answered to w's header, as admit added them to the Handler's.
func (l *eloop) dryRun(w http.ResponseWriter) {
	if c := l.cur; len(c.dry) > 0 {
		w.Header()[DryRunHeader] = append([]string(nil), c.dry...)
	}
}

// guarded is the function guarded on the loop's own guardWriter.
func (l *eloop) guarded(w http.ResponseWriter, serve func(w http.ResponseWriter)) {
	l.gw = guardWriter{ResponseWriter: w}
	defer l.gw.cutOff()
	serve(&l.gw)
	l.gw.returned = true
}

// guarded runs serve on w as the guard in front of the Handler runs it:
// a response cut off (serve panics with http.ErrAbortHandler) sends the
// header written before it.
func guarded(w http.ResponseWriter, serve func(w http.ResponseWriter)) {
	gw := &guardWriter{ResponseWriter: w}
	defer gw.cutOff()
	serve(gw)
	gw.returned = true
}

// answerError answers c's request as the Proxy answers a failed exchange.
func (l *eloop) answerError(c *econn, err error) {
	l.respondError(c, err)
	l.driveClient(c)
}

// respondError makes c's answer to a failed exchange, as answerError.
func (l *eloop) respondError(c *econn, err error) {
	l.release(c)
	l.cur, l.curErr = c, err
	l.respond(c, l.errorFn)
	l.cur, l.curErr = nil, nil
}

// upstreamFailed closes u, whose exchange got no response, failed with
// err. The request goes again on the next connection as the transport's
// retry says (a reused connection that closed or reset), else the client
// has the Proxy's 502 or 504.
func (l *eloop) upstreamFailed(u *econn, err error) {
	c := u.peer
	u.peer, c.peer = nil, nil
	u.Out, u.Sent = nil, 0
	l.closeUp(u)
	t := l.s.p.t
	retry := u.reused && !t.noRetry && !IsTimeout(err) && !errors.Is(err, errUpstreamHeader)
	if retry {
		l.forward(c)
		return
	}
	l.answerError(c, err)
}

// putIdle makes u idle, closing the least recently used idle connection
// if the loop keeps as many as it may.
func (l *eloop) putIdle(u *econn) {
	u.In, u.headLen, u.length = u.In[:0], 0, -1
	if cap(u.In) > 64<<10 {
		u.In = make([]byte, 0, 4<<10)
	}
	if len(l.idle) >= l.s.p.t.pool.max {
		l.closeUp(l.idle[0])
	}
	l.idle = append(l.idle, u)
	l.setDeadline(u, l.s.p.t.pool.timeout)
	if u.ReadReady || u.EOF {
		l.driveUpstream(u)
	}
}

// dropIdle closes idle upstream connection u.
func (l *eloop) dropIdle(u *econn) {
	l.closeUp(u)
}

// closeUp closes upstream connection u, taking it off the idle list.
func (l *eloop) closeUp(u *econn) {
	for i, v := range l.idle {
		if v == u {
			l.idle = append(l.idle[:i], l.idle[i+1:]...)
			break
		}
	}
	if c := u.peer; c != nil {
		u.peer, c.peer = nil, nil
	}
	if !u.closed {
		if l.conns[u.Fd] == u {
			l.conns[u.Fd] = nil
		}
		unix.Close(u.Fd) //nolint:errcheck
		u.closed = true
	}
}

// closeClient closes client c: its request, if any, ends (its slots are
// given back before the fd closes, see fdConn) and its upstream
// connection, if any, closes.
func (l *eloop) closeClient(c *econn) {
	if c.closed {
		return
	}
	if u := c.peer; u != nil {
		l.closeUp(u)
	}
	c.a.end(l.s.h)
	l.release(c)
	if l.conns[c.Fd] == c {
		l.conns[c.Fd] = nil
	}
	unix.Close(c.Fd) //nolint:errcheck
	c.closed = true
	l.clients--
	l.s.conns.Add(-1)
}

// handOff gives client c, in clientReading with nothing of a request
// taken, and the bytes it sent so far to the lean server.
func (l *eloop) handOff(c *econn) {
	l.release(c)
	l.forget(c)
	l.clients--
	l.s.handed.Add(1)
	prefix := append([]byte(nil), c.In[c.start:]...)
	nc, err := fdNetConn(c.Fd, nil)
	if err != nil {
		l.s.conns.Add(-1)
		return
	}
	l.s.hand.ServeConn(l.s.handedConn(nc, prefix)) //nolint:errcheck // closed after a shutdown
}

// handedConn wraps nc, a client connection leaving a loop, as Listen's
// listener wraps the connections it accepts: counted against MaxConns
// until closed, its requests' framing scanned for the guard.
func (s *EpollServer) handedConn(nc net.Conn, prefix []byte) net.Conn {
	return &limitConn{Conn: &prefixConn{Conn: nc, prefix: prefix}, release: func() { s.conns.Add(-1) }}
}

// fdNetConn makes fd, which it takes over, a net.Conn on Go's netpoller
// (a duplicate of fd); made, before fd closes, it is given to made if
// that is not nil.
func fdNetConn(fd int, made func(net.Conn)) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "")
	nc, err := net.FileConn(f)
	if err == nil && made != nil {
		made(nc)
	}
	f.Close()
	return nc, err
}

// prefixConn is a connection whose first reads return prefix, the bytes
// read from it before.
type prefixConn struct {
	net.Conn
	prefix []byte
}

// CloseWrite half-closes the connection, as limitConn's does.
func (c *prefixConn) CloseWrite() error { return h1.CloseWrite(c.Conn) }

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// SyscallConn is the socket's, for clientGone.
func (c *prefixConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}

// streamUp hands u's exchange, whose response the loop does not hold
// whole, to a goroutine that reads it as the Proxy reads it and streams
// it to the client; the client connection then goes to the lean server,
// or closes.
func (l *eloop) streamUp(u *econn) {
	c := u.peer
	u.peer, c.peer = nil, nil
	l.forget(u)
	l.forget(c)
	l.clients--
	l.s.streamed.Add(1)
	var deadline time.Time
	if u.deadline != 0 {
		deadline = time.Now().Add(time.Duration(u.deadline - l.now))
	}
	x := &streamed{
		s: l.s, req: c.req, a: c.a, dry: append([]string(nil), c.dry...), deadline: deadline,
		upIn: append([]byte(nil), u.In...), clientIn: append([]byte(nil), c.In[c.start:]...),
		keep: c.keep, fwd: c.fwd, watch: !c.EOF,
	}
	c.a, c.fwd = admission{}, nil
	var err error
	if x.up, err = fdNetConn(u.Fd, nil); err == nil {
		// The holder asks the new socket before the loop's fd closes.
		x.client, err = fdNetConn(c.Fd, func(nc net.Conn) {
			if x.a.holder == nil {
				return
			}
			var rc syscall.RawConn
			if sc, ok := nc.(syscall.Conn); ok {
				rc, _ = sc.SyscallConn()
			}
			l.s.h.holders.rebind(x.a.holder, rc)
		})
		if err != nil {
			x.up.Close()
		}
	} else {
		unix.Close(c.Fd) //nolint:errcheck
	}
	if err != nil {
		x.a.end(l.s.h)
		x.fwd.put()
		l.s.conns.Add(-1)
		return
	}
	go x.run()
}

// streamed is one exchange streamUp hands to a goroutine.
type streamed struct {
	s        *EpollServer
	req      *http.Request
	a        admission
	fwd      *forward
	dry      []string
	up       net.Conn
	client   net.Conn
	upIn     []byte // what the loop read of the response
	clientIn []byte // what the loop read of the client's next requests
	deadline time.Time
	keep     bool
	watch    bool // watch the client for its end (it had not sent one with its request)
}

func (x *streamed) run() {
	s := x.s
	defer x.fwd.put()
	defer x.up.Close()
	p, r := s.p, x.req
	x.up.SetReadDeadline(x.deadline) //nolint:errcheck // a closed conn fails the read
	hc := &headerConn{Conn: &prefixConn{Conn: x.up, prefix: x.upIn}}
	hc.left.Store(maxUpstreamHeader)
	br := bufio.NewReaderSize(hc, 4<<10)
	var plain http.Response
	var known knownBody
	resp, err := readResponse(br, r, &plain, &known)
	if err != nil && hc.timedOut.Load() {
		err = errHeaderTimeout
	}
	if err == nil {
		hc.left.Store(-1)
		resp.Body = &streamBody{body: resp.Body, conn: x.up, br: br, timeout: p.t.readTimeout}
	}
	// The client is watched for its end while the answer streams, as the
	// loop watched it: its going closes the upstream connection, which
	// ends the answer. A byte it sends (its next request) ends the watch.
	var (
		stopping, gone atomic.Bool
		next           [1]byte
		got            int
	)
	watched := make(chan struct{})
	if x.watch {
		go func() {
			defer close(watched)
			n, err := x.client.Read(next[:])
			got = n
			if n == 0 && !(stopping.Load() && isTimeoutErr(err)) {
				gone.Store(true)
				x.up.Close()
			}
		}()
	} else {
		close(watched)
	}
	rsp := h1.NewResponder(s.hand)
	keep, aborted := rsp.Respond(x.client, r, func(w http.ResponseWriter) {
		if len(x.dry) > 0 {
			w.Header()[DryRunHeader] = x.dry
		}
		guarded(w, func(w http.ResponseWriter) {
			if err != nil {
				proxyError(w, r, err)
				return
			}
			p.answer(w, r, resp)
		})
	})
	if resp != nil {
		resp.Body.Close()
	}
	x.a.end(s.h)
	stopping.Store(true)
	x.client.SetReadDeadline(time.Unix(1, 0)) //nolint:errcheck // a closed conn ends the read anyway
	<-watched
	x.client.SetReadDeadline(time.Time{}) //nolint:errcheck
	if got == 1 {
		x.clientIn = append(x.clientIn, next[0])
	}
	if keep && !aborted && x.keep && !gone.Load() && x.watch {
		s.handed.Add(1)
		s.hand.ServeConn(s.handedConn(x.client, x.clientIn)) //nolint:errcheck // closed after a shutdown
		return
	}
	x.client.Close()
	s.conns.Add(-1)
}

// isTimeoutErr reports whether err is a deadline's.
func isTimeoutErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// streamBody is a streamed response's body, each wait for more of it
// bounded by the read timeout, as upstreamBody's.
type streamBody struct {
	body    io.ReadCloser
	conn    net.Conn
	br      *bufio.Reader
	timeout time.Duration
}

func (b *streamBody) Read(p []byte) (int, error) {
	if b.timeout > 0 && b.br.Buffered() == 0 {
		b.conn.SetReadDeadline(time.Now().Add(b.timeout)) //nolint:errcheck // a closed conn fails the read
	}
	return b.body.Read(p)
}

func (b *streamBody) Close() error { return b.body.Close() }

// recorder is the response writer admit answers a rejection on in a
// loop: the loop replays it through its Responder.
type recorder struct {
	hdr    http.Header
	status int
	body   []byte
}

func (r *recorder) reset() {
	clear(r.hdr)
	r.status, r.body = 0, r.body[:0]
}

func (r *recorder) Header() http.Header { return r.hdr }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body = append(r.body, p...)
	return len(p), nil
}

func (r *recorder) WriteString(s string) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body = append(r.body, s...)
	return len(s), nil
}

// replay writes what r recorded to w.
func (r *recorder) replay(w http.ResponseWriter) {
	h := w.Header()
	for k, vv := range r.hdr {
		h[k] = append([]string(nil), vv...)
	}
	if r.status != 0 {
		w.WriteHeader(r.status)
	}
	w.Write(r.body) //nolint:errcheck // a Responder's writer fails only with its connection
}

// sliceWriter appends what is written to b.
type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}
