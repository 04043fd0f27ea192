package loadgen

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"stampede/clock"
	"stampede/internal/h1"
	"stampede/workload"
)

// haveLoops says closed-model users can be played on event loops here.
const haveLoops = true

// Closed-model users on event loops. Against nginx's `return 200` on a
// 2-core machine, a goroutine per user blocking on its connection cost
// 11-13 µs of CPU per request (two thirds in the kernel: the threads the
// runtime parks and wakes for every answer, a read that finds nothing
// before each park, a high-resolution timer per MinCycle wait), wrk 4.7-6.7
// µs: each loop here owns a share of the users and their connections,
// writes each request and reads each answer without blocking, and sleeps
// in one epoll_pwait2 whose timeout is the next send or client timeout
// due: a write, a read and a share of a wait per request, no goroutine
// woken.

// loopUser is one closed-model user a loop plays, following its tenant's
// loop (workload.Closed) as Driver.user does.
type loopUser struct {
	t    *tenant
	idx  int // in its loop's users
	rng  *rand.Rand
	from netip.Addr // source address; zero: the system's choice
	rt   *h1.Client // the goroutine path's client from that address (fallback)
	gets [][]byte   // the request of each route (h1.AppendGet), shared by the tenant's users

	done int           // iterations done (workload.Closed.Next)
	next time.Duration // model time of the next send
	// Heap position (-1: out) and key, in nanoseconds since the run's
	// start: the send's target while the user waits to send (idle), the
	// client timeout or connect's end while a request is in flight.
	hi    int
	key   int64
	idle  bool // waiting to send
	paced bool // the loop waits for the send, whose lateness the pacer learns

	// The request in flight.
	s        sending
	dialBy   time.Time // the connect's deadline: dialTimeout, or the client timeout when sooner
	route    int
	retried  bool
	c        *loopConn
	service  []string
	limited  bool
	started  bool // the loop took it up
	finished bool
}

// loopConn is a user's connection.
type loopConn struct {
	fd         int
	gen        uint32 // tells a new connection of the user from the one before in an event
	connecting bool
	writeReady bool
	used       bool // an answer ended well on it
	out        []byte
	sent       int
	ans        h1.Answer
}

// loop is one event loop and its users; only its goroutine touches it.
type loop struct {
	d       *Driver
	ctx     context.Context
	start   time.Time
	out     chan<- workload.Result
	to      unix.Sockaddr
	family  int
	ep      int
	wake    int // eventfd: ctx ended
	users   []*loopUser
	heap    []*loopUser
	active  int // users not finished
	gen     uint32
	events  [128]unix.EpollEvent
	buf     [64 << 10]byte
	noWait2 bool // the kernel has no epoll_pwait2: millisecond timeouts
}

// canLoop reports whether t's users can be played on event loops as
// faithfully as on goroutines: over TCP (not DriverOptions.Dial) to a target
// whose host is an IP address, with precise timers (a loop cannot wait on
// testing/synctest's fake clock), and without think time. A user that
// thinks idles its connection, and goroutines share a tenant's idle
// connections among its users, so that a server sees as many connections as
// requests are in flight, whereas a loop keeps one connection per user: a
// gunicorn sync worker holds each connection it accepted until a request
// comes on it.
func (d *Driver) canLoop(t *tenant) bool {
	return d.opts.PreciseTimers && d.opts.Dial == nil && d.loopTo.IsValid() && t.load.Think <= 0
}

// runLoops plays users on event loops, one less than GOMAXPROCS (at least
// one, at most one per user), users shared among them in turn, and returns
// when every loop has ended: every user stopped, or ctx ended. The P left
// over runs the sink's goroutine, which records every result, and the
// runtime's own: against nginx's `return 200` on a 2-core machine, 64
// users on one loop sent 116k-122k requests a second at 6-7.4 µs of CPU
// each, and on two 82k-108k at 6-13 µs (each loop's wait then gave up its
// P to the sink and took it back, through sysmon).
func (d *Driver) runLoops(ctx context.Context, start time.Time, users []*loopUser, out chan<- workload.Result) {
	n := min(max(runtime.GOMAXPROCS(0)-1, 1), len(users))
	loops := make([]*loop, n)
	for i, u := range users {
		if loops[i%n] == nil {
			loops[i%n] = &loop{d: d, ctx: ctx, start: start, out: out}
		}
		l := loops[i%n]
		l.users = append(l.users, u)
	}
	var wg sync.WaitGroup
	for _, l := range loops {
		wg.Go(func() {
			if err := l.run(); err != nil {
				l.fallback(err)
			}
		})
	}
	wg.Wait()
}

// fallback plays on goroutines, from where they are, the users of a loop
// that could not run (err), once it ended the requests it had in flight
// with err: a loop that cannot start (no epoll instance to be had) sends
// nothing, and one whose poll failed leaves its users to go on as the
// goroutine path plays them.
func (l *loop) fallback(err error) {
	var wg sync.WaitGroup
	for _, u := range l.users {
		if u.finished {
			continue
		}
		next, more := u.next, true
		if !u.started {
			next, more = u.t.loop.First()
		}
		if !u.idle && u.s.t != nil {
			// In flight; its connection was closed with the loop's.
			s := u.s
			u.s = sending{}
			r, ok := l.d.finish(l.ctx, &s, time.Now(), 0, false, nil, err)
			if !ok {
				continue
			}
			l.out <- r
			next, more = u.t.loop.Next(&u.done, r.Intended, max(l.d.scale.Model(time.Since(l.start)), r.Intended+r.Latency), r.Outcome)
		}
		wg.Go(func() { l.d.userFrom(l.ctx, l.start, u.t, u.rt, u.rng, l.out, u.done, next, more) })
	}
	wg.Wait()
}

// run plays the loop's users until each stopped or ctx ended.
func (l *loop) run() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// The poll's timeouts are the sends' moments: without the kernel's
	// default timer slack of 50 µs, they wake as a high-resolution timer
	// does. Put back before the thread goes back to the runtime.
	if slack, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0); err == nil {
		unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)                    //nolint:errcheck
		defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(slack), 0, 0, 0) //nolint:errcheck
	}
	var err error
	if l.ep, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return fmt.Errorf("loadgen: event loop: epoll_create1: %w", err)
	}
	defer unix.Close(l.ep) //nolint:errcheck
	if l.wake, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return fmt.Errorf("loadgen: event loop: eventfd: %w", err)
	}
	defer unix.Close(l.wake) //nolint:errcheck
	if err = unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, l.wake, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: -1}); err != nil {
		return fmt.Errorf("loadgen: event loop: epoll_ctl: %w", err)
	}
	// The write must be over before the eventfd is closed: once closed,
	// its number may be another file's.
	woken := make(chan struct{})
	stop := context.AfterFunc(l.ctx, func() {
		defer close(woken)
		one := [8]byte{1}
		unix.Write(l.wake, one[:]) //nolint:errcheck
	})
	defer func() {
		if !stop() {
			<-woken
		}
	}()
	l.to, l.family = l.d.loopSockaddr()
	defer l.closeAll()

	now := time.Now()
	for i, u := range l.users {
		u.idx, u.hi, u.started = i, -1, true
		next, more := u.t.loop.First()
		if !more {
			u.finished = true
			continue
		}
		l.active++
		u.next = next
		l.due(u, now)
	}
	for l.active > 0 {
		if l.ctx.Err() != nil {
			l.abort()
			return nil
		}
		l.fire(time.Now())
		// From after fire's sends, which take a while when many come due
		// at once: the next moment's wait is that much shorter.
		timeout := time.Duration(-1)
		if len(l.heap) > 0 {
			timeout = max(time.Duration(l.heap[0].key-int64(time.Since(l.start))), 0)
		}
		if l.active == 0 {
			break
		}
		n, err := l.wait(timeout)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("loadgen: event loop: epoll_wait: %w", err)
		}
		for _, ev := range l.events[:n] {
			if ev.Fd < 0 {
				continue // ctx ended: seen at the top
			}
			u := l.users[ev.Fd]
			if u.c == nil || u.c.gen != uint32(ev.Pad) {
				continue // an event of a connection closed since
			}
			l.event(u, ev.Events)
		}
	}
	return nil
}

// wait polls for events: first without blocking and out of the
// runtime's sight, as the epoll server's loops do, then blocking for up
// to timeout (negative: no bound) through a system call the runtime sees,
// so that the loop's P serves the other goroutines meanwhile.
func (l *loop) wait(timeout time.Duration) (int, error) {
	ev := uintptr(unsafe.Pointer(&l.events[0]))
	n, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(l.ep), ev, uintptr(len(l.events)), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	if n > 0 || timeout == 0 {
		return int(n), nil
	}
	if !l.noWait2 {
		var ts *unix.Timespec
		if timeout > 0 {
			t := unix.NsecToTimespec(int64(timeout))
			ts = &t
		}
		n, _, errno = unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(l.ep), ev, uintptr(len(l.events)), uintptr(unsafe.Pointer(ts)), 0, 0)
		if errno != unix.ENOSYS {
			if errno != 0 {
				return 0, errno
			}
			return int(n), nil
		}
		l.noWait2 = true
	}
	ms := -1
	if timeout > 0 {
		ms = int((timeout + time.Millisecond - 1) / time.Millisecond)
	}
	return unix.EpollWait(l.ep, l.events[:], ms)
}

// due schedules u's next send, at model time u.next: at once when its
// moment (less the pacer's lead) had come by now, or else when the loop
// wakes for it. A send at once reads the clock again, as Driver.do does:
// now may be a while ago (the loop's start before every user's first
// dial, an answer before the sink's channel took its result), and the
// send's lateness and deadline count from when it goes.
func (l *loop) due(u *loopUser, now time.Time) {
	u.idle = true
	target := int64(l.d.scale.Wall(u.next)) - int64(l.d.pacer.Lead())
	if target <= int64(now.Sub(l.start)) {
		u.paced = false
		l.send(u, time.Now())
		return
	}
	u.paced = true
	l.push(u, target)
}

// fire sends the sends due and times out the requests past their client
// timeout (or connect's).
func (l *loop) fire(now time.Time) {
	at := int64(now.Sub(l.start))
	for len(l.heap) > 0 && l.heap[0].key <= at {
		u := l.heap[0]
		l.remove(u)
		if u.idle {
			clock.RecordWake(time.Duration(at - u.key))
			l.send(u, time.Now())
			continue
		}
		err := os.ErrDeadlineExceeded
		if u.c != nil && u.c.connecting && (u.s.deadline.IsZero() || u.dialBy.Before(u.s.deadline)) {
			// The connect's own bound (dialTimeout): a client timeout all
			// the same for a request that has one, as net's dial error is.
			err = fmt.Errorf("loadgen: dial tcp: connect: %w", os.ErrDeadlineExceeded)
		}
		l.end(u, now, 0, err)
	}
}

// send starts u's next request.
func (l *loop) send(u *loopUser, now time.Time) {
	if l.ctx.Err() != nil {
		return // the top of the loop aborts
	}
	u.idle = false
	u.route = u.t.mix.Pick(u.rng)
	u.s = l.d.begin(l.start, u.t, u.route, u.next, now, u.paced)
	u.retried = false
	l.transmit(u, now)
}

// transmit writes u's request on its connection, dialled when it has
// none.
func (l *loop) transmit(u *loopUser, now time.Time) {
	u.service, u.limited = nil, false
	if u.c == nil {
		if err := l.dial(u); err != nil {
			l.end(u, now, 0, err)
			return
		}
	}
	c := u.c
	c.out, c.sent = u.gets[u.route], 0
	c.ans.Reset()
	if c.connecting {
		// The connect's bound, or the client timeout when sooner.
		u.dialBy = now.Add(dialTimeout)
		if !u.s.deadline.IsZero() && u.s.deadline.Before(u.dialBy) {
			u.dialBy = u.s.deadline
		}
		l.push(u, int64(u.dialBy.Sub(l.start)))
		return
	}
	if !u.s.deadline.IsZero() {
		l.push(u, int64(u.s.deadline.Sub(l.start)))
	}
	l.flush(u)
}

// dial opens u's connection without waiting for it (a non-blocking
// connect), from u's source address, with the socket options of the
// driver's net.Dialer.
func (l *loop) dial(u *loopUser) error {
	fd, err := unix.Socket(l.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", err)}
	}
	fail := func(op string, err error) error {
		unix.Close(fd) //nolint:errcheck
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError(op, err)}
	}
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)    //nolint:errcheck
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1)    //nolint:errcheck
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, 30)  //nolint:errcheck
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, 30) //nolint:errcheck
	if u.from.IsValid() {
		// As bindNoPort does for the goroutines' dials.
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1); err != nil && err != unix.ENOPROTOOPT {
			return fail("setsockopt", err)
		}
		var sa unix.Sockaddr
		if u.from.Is4() {
			sa = &unix.SockaddrInet4{Addr: u.from.As4()}
		} else {
			sa = &unix.SockaddrInet6{Addr: u.from.As16()}
		}
		if err := unix.Bind(fd, sa); err != nil {
			return fail("bind", err)
		}
	}
	err = unix.Connect(fd, l.to)
	if err != nil && err != unix.EINPROGRESS {
		return fail("connect", err)
	}
	l.gen++
	c := &loopConn{fd: fd, gen: l.gen, connecting: err != nil, writeReady: err == nil}
	c.ans.Header = func(name, value []byte) { header(&u.service, &u.limited, name, value) }
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(u.idx), Pad: int32(c.gen)}
	if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fail("epoll_ctl", err)
	}
	u.c = c
	return nil
}

// event moves u on after epoll's word on its connection.
func (l *loop) event(u *loopUser, ev uint32) {
	c := u.c
	if u.idle || u.s.t == nil {
		// Idle, and the server closed it or sent what nobody asked for;
		// or an edge of bytes the last answer's read took already, or a
		// write edge, of no interest.
		if ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 && !quiet(c.fd) {
			l.closeConn(u)
		}
		return
	}
	if c.connecting {
		if ev&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) == 0 {
			return
		}
		c.connecting = false
		if serr, err := unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_ERROR); err != nil || serr != 0 {
			if err == nil {
				err = unix.Errno(serr)
			}
			l.end(u, time.Now(), 0, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", err)})
			return
		}
		// The connect's bound gives way to the client timeout.
		if u.s.deadline.IsZero() {
			l.remove(u)
		} else {
			l.push(u, int64(u.s.deadline.Sub(l.start)))
		}
		// On: the same edge may have brought the answer and the peer's
		// end too, when the loop was busy as they came.
	}
	if ev&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		c.writeReady = true
		if c.sent < len(c.out) {
			if !l.flush(u) {
				return
			}
		}
	}
	if ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		l.read(u, ev&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0)
	}
}

// flush writes what is left of u's request, and reports false when the
// write failed and ended or resent the request.
func (l *loop) flush(u *loopUser) bool {
	c := u.c
	for c.sent < len(c.out) && c.writeReady {
		n, err := sys(unix.SYS_WRITE, c.fd, c.out[c.sent:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			c.writeReady = false
		case err != nil:
			l.failed(u, os.NewSyscallError("write", err))
			return false
		default:
			c.sent += n
		}
	}
	return true
}

// read reads what the connection has of the answer, and ends the request
// when it is whole, or when the connection failed or ended. Ended says
// the peer's end came with the bytes (EPOLLRDHUP): it is read even after
// a short read, since no edge will come for it again.
func (l *loop) read(u *loopUser, ended bool) {
	c := u.c
	for {
		n, err := sys(unix.SYS_READ, c.fd, l.buf[:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return
		case err != nil:
			l.broken(u, os.NewSyscallError("read", err))
			return
		case n == 0:
			if done, err := c.ans.End(); done {
				l.answered(u, false)
			} else {
				l.broken(u, err)
			}
			return
		}
		used, done, perr := c.ans.Feed(l.buf[:n])
		if perr != nil {
			l.end(u, time.Now(), 0, perr)
			return
		}
		if done {
			// Bytes past the answer answer nothing that was asked: the
			// connection is not to be trusted with another request.
			l.answered(u, used == n && c.ans.Keep())
			return
		}
		if n < len(l.buf) && !ended {
			return // a short read emptied the socket: the next byte brings an edge
		}
	}
}

// broken ends u's request whose connection failed or ended with err:
// resent once on a new connection when the connection was reused and no
// byte of the answer came, as h1.Client does.
func (l *loop) broken(u *loopUser, err error) {
	if u.c.ans.Started() {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		l.end(u, time.Now(), 0, err)
		return
	}
	l.failed(u, err)
}

// failed ends u's request whose connection failed before any byte of the
// answer came, or resends it once on a new connection when the connection
// was reused (the server closed it while idle) and its deadline has not
// passed.
func (l *loop) failed(u *loopUser, err error) {
	now := time.Now()
	if u.c.used && !u.retried && l.ctx.Err() == nil && (u.s.deadline.IsZero() || now.Before(u.s.deadline)) {
		u.retried = true
		l.closeConn(u)
		l.remove(u)
		l.transmit(u, now)
		return
	}
	l.end(u, now, 0, err)
}

// answered ends u's request, whose answer was read whole; keep says the
// connection may carry the next.
func (l *loop) answered(u *loopUser, keep bool) {
	now := time.Now()
	status := u.c.ans.Status()
	u.c.used = true
	if !keep {
		l.closeConn(u)
	}
	l.record(u, now, status, nil)
}

// end ends u's request at now with err (or a status), closing its
// connection on an error.
func (l *loop) end(u *loopUser, now time.Time, status int, err error) {
	if err != nil && u.c != nil {
		l.closeConn(u)
	}
	l.record(u, now, status, err)
}

// record hands u's result to the sink's channel and schedules its next
// send, or finishes it.
func (l *loop) record(u *loopUser, now time.Time, status int, err error) {
	l.remove(u)
	u.idle = true
	s := u.s
	u.s = sending{}
	r, ok := l.d.finish(l.ctx, &s, now, status, u.limited, u.service, err)
	if !ok {
		l.finish(u)
		return
	}
	l.out <- r
	next, more := u.t.loop.Next(&u.done, r.Intended, max(l.d.scale.Model(now.Sub(l.start)), r.Intended+r.Latency), r.Outcome)
	if !more {
		l.finish(u)
		return
	}
	u.next = next
	l.due(u, now)
}

// finish stops u.
func (l *loop) finish(u *loopUser) {
	l.remove(u)
	if u.c != nil {
		l.closeConn(u)
	}
	u.finished = true
	l.active--
}

// abort ends every request in flight when ctx ended, as Driver.do's do
// when their connections are aborted, and stops every user.
func (l *loop) abort() {
	now := time.Now()
	for _, u := range l.users {
		if u.finished {
			continue
		}
		if !u.idle && u.s.t != nil {
			s := u.s
			u.s = sending{}
			if r, ok := l.d.finish(l.ctx, &s, now, 0, false, nil, l.ctx.Err()); ok {
				l.out <- r
			}
		}
		l.finish(u)
	}
}

// closeConn closes u's connection.
func (l *loop) closeConn(u *loopUser) {
	if u.c == nil {
		return
	}
	unix.EpollCtl(l.ep, unix.EPOLL_CTL_DEL, u.c.fd, nil) //nolint:errcheck
	unix.Close(u.c.fd)                                   //nolint:errcheck
	u.c = nil
}

// closeAll closes every connection still open.
func (l *loop) closeAll() {
	for _, u := range l.users {
		l.closeConn(u)
	}
}

// quiet reports whether the socket fd has nothing to read and is not
// closed: its peer said nothing since.
func quiet(fd int) bool {
	var b [1]byte
	_, _, err := unix.Recvfrom(fd, b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	return err == unix.EAGAIN
}

// sys is read(2) or write(2) on fd through RawSyscall: the socket never
// blocks. p must not be empty.
func sys(trap uintptr, fd int, p []byte) (int, error) {
	n, _, errno := unix.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// push puts u in the heap with key, or moves it there.
func (l *loop) push(u *loopUser, key int64) {
	if u.hi >= 0 {
		l.remove(u)
	}
	u.key = key
	u.hi = len(l.heap)
	l.heap = append(l.heap, u)
	l.up(u.hi)
}

// remove takes u out of the heap, when it is there.
func (l *loop) remove(u *loopUser) {
	i := u.hi
	if i < 0 {
		return
	}
	last := len(l.heap) - 1
	if i != last {
		l.swap(i, last)
	}
	l.heap[last] = nil
	l.heap = l.heap[:last]
	u.hi = -1
	if i != last {
		l.down(i)
		l.up(i)
	}
}

func (l *loop) swap(i, j int) {
	l.heap[i], l.heap[j] = l.heap[j], l.heap[i]
	l.heap[i].hi, l.heap[j].hi = i, j
}

func (l *loop) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if l.heap[p].key <= l.heap[i].key {
			return
		}
		l.swap(i, p)
		i = p
	}
}

func (l *loop) down(i int) {
	for {
		m, a, b := i, 2*i+1, 2*i+2
		if a < len(l.heap) && l.heap[a].key < l.heap[m].key {
			m = a
		}
		if b < len(l.heap) && l.heap[b].key < l.heap[m].key {
			m = b
		}
		if m == i {
			return
		}
		l.swap(i, m)
		i = m
	}
}

// loopSockaddr returns the target's address (Driver.loopTo) for connect(2),
// and its address family.
func (d *Driver) loopSockaddr() (unix.Sockaddr, int) {
	a := d.loopTo.Addr()
	if a.Is4() {
		return &unix.SockaddrInet4{Port: int(d.loopTo.Port()), Addr: a.As4()}, unix.AF_INET
	}
	return &unix.SockaddrInet6{Port: int(d.loopTo.Port()), Addr: a.As16()}, unix.AF_INET6
}
