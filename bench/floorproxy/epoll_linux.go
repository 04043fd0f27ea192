//go:build linux

package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"stampede/internal/epoll"
	"stampede/internal/h1"
)

// This file is -server epoll: the proxy of -keepalive without Go's
// netpoller, in nginx's shape. Each of GOMAXPROCS loops holds its OS
// thread and its own epoll instance, its own listener, its own client
// connections and its own idle upstream connections, so that no loop ever
// waits on another or takes a lock.
//
// The listeners are one socket per loop on the same port with
// SO_REUSEPORT, not one shared socket with EPOLLEXCLUSIVE (what nginx does
// without `listen ... reuseport`): the kernel spreads new connections over
// the loops by their addresses, so wrk's connections, all made at its
// start, fall on the loops about evenly whichever loop is awake, and no
// accept is ever tried by two loops.
//
// Sockets are non-blocking and registered once, edge-triggered, for
// reading and writing. As nginx does, each connection keeps a flag per
// direction that says whether the socket may have more to give (or room to
// take): an event sets it, EAGAIN or a short read or write clears it, and
// nothing is read or written while it is clear. So after a request is
// written upstream the answer is not read until epoll says it is there, and
// after a response is written the client is not read until its next
// request comes: no read that can only return EAGAIN. internal/epoll holds
// that poller and connection, which stampede proxy --server epoll runs on too.

// epollServer is the -server epoll proxy. Serve runs it; Close, safe to
// call from any goroutine and more than once, stops it.
type epollServer struct {
	loops []*eloop
	port  int

	mu     sync.Mutex
	closed bool // Close was called
	done   bool // Serve has returned and closed the loops' wake-up fds
}

// serveEpoll serves listen with one loop per P, forwarding to upstream and
// keeping up to keepAlive idle upstream connections per loop (as nginx's
// keepalive counts per worker).
//
// With raw, the loops make their system calls with RawSyscall, which the
// runtime does not see. Through Syscall, a loop waiting in epoll_wait is a
// goroutine in a system call, and a goroutine locked to its thread that is
// never rescheduled looks to sysmon as if it had run for more than 10ms: on
// every tick that finds it in a system call, sysmon takes its P and hands
// it off, and so keeps waking every 20µs, and the loop, back from the call,
// takes a P again; bench/proxy.sh's "floor epoll syscall" shows what those
// sleeps, futex wake-ups and context switches cost. Through RawSyscall the loops'
// Ps look busy running Go code: sysmon takes none and only asks a loop to
// yield every 10ms, with a signal that ends an epoll_wait with EINTR, and
// no call pays entersyscall and exitsyscall. A loop then waits in
// epoll_wait at most 10ms at a time, so that a stop-the-world never waits
// longer on it even if no signal reached it. Raw suits a process that
// runs nothing but its loops, one per P: any other goroutine gets a P only
// when sysmon makes a loop yield.
func serveEpoll(listen, upstream string, keepAlive int, raw bool) error {
	s, err := newEpollServer(listen, upstream, runtime.GOMAXPROCS(0), keepAlive, raw)
	if err != nil {
		return err
	}
	return s.Serve()
}

// newEpollServer binds listen (port 0 picks one) with loops listeners;
// raw is serveEpoll's.
func newEpollServer(listen, upstream string, loops, keepAlive int, raw bool) (*epollServer, error) {
	if loops < 1 || keepAlive < 1 {
		return nil, fmt.Errorf("epoll server: %d loops, keepalive %d: want 1 or more of each", loops, keepAlive)
	}
	la, err := inet4(listen)
	if err != nil {
		return nil, err
	}
	ua, err := inet4(upstream)
	if err != nil {
		return nil, err
	}
	s := &epollServer{}
	for range loops {
		l, err := newLoop(la, ua, keepAlive)
		if err != nil {
			for _, l := range s.loops {
				l.closeAll()
				unix.Close(l.wake) //nolint:errcheck
			}
			return nil, err
		}
		l.raw = raw
		s.loops = append(s.loops, l)
		if la.Port == 0 {
			// The first listener picked the port; the others share it.
			sa, err := unix.Getsockname(l.ln)
			if err != nil {
				return nil, fmt.Errorf("epoll server: getsockname: %w", err)
			}
			la.Port = sa.(*unix.SockaddrInet4).Port
		}
	}
	s.port = la.Port
	return s, nil
}

// inet4 is hostport as an IPv4 socket address.
func inet4(hostport string) (*unix.SockaddrInet4, error) {
	a, err := net.ResolveTCPAddr("tcp4", hostport)
	if err != nil {
		return nil, fmt.Errorf("epoll server: %w", err)
	}
	sa := &unix.SockaddrInet4{Port: a.Port}
	if a.IP != nil {
		copy(sa.Addr[:], a.IP.To4())
	}
	return sa, nil
}

// Serve runs the loops until Close or until one fails, and returns the
// first failure (nil after Close).
func (s *epollServer) Serve() error {
	errc := make(chan error, len(s.loops))
	for _, l := range s.loops {
		go func() { errc <- l.run() }()
	}
	var first error
	for range s.loops {
		if err := <-errc; err != nil && first == nil {
			first = err
			s.Close() //nolint:errcheck // stop the other loops
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	for _, l := range s.loops {
		unix.Close(l.wake) //nolint:errcheck
	}
	return first
}

// Close tells every loop to close its connections and return.
func (s *epollServer) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.done {
		return nil
	}
	s.closed = true
	one := []byte{1, 0, 0, 0, 0, 0, 0, 0} // eventfd adds a native-endian uint64
	var first error
	for _, l := range s.loops {
		if _, err := unix.Write(l.wake, one); err != nil && first == nil {
			first = fmt.Errorf("epoll server: waking a loop: %w", err)
		}
	}
	return first
}

// eloop is one event loop; only its own goroutine touches it.
type eloop struct {
	poll     epoll.Poller // the loop's epoll instance (Fd -1 once closed) and its events
	ln, wake int
	upstream *unix.SockaddrInet4
	keep     int      // idle upstream connections kept at most
	idle     []*econn // idle upstream connections, the last the most recently used
	conns    []*econn // by fd; nil for none
	raw      bool     // system calls through RawSyscall (see serveEpoll)
}

func newLoop(la, ua *unix.SockaddrInet4, keepAlive int) (*eloop, error) {
	// A SockaddrInet4 holds the raw form it passes to the kernel: each loop has its own.
	up := *ua
	l := &eloop{poll: epoll.Poller{Fd: -1}, ln: -1, wake: -1, upstream: &up, keep: keepAlive}
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
	if l.ln, err = epoll.Listen(la); err != nil {
		return fail(fmt.Sprintf("listen %v:%d", net.IP(la.Addr[:]), la.Port), err)
	}
	if l.wake, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return fail("eventfd", err)
	}
	// Both level-triggered: the listener's backlog is drained a bounded
	// number at a time, and the wake-up is never read.
	for _, fd := range []int{l.ln, l.wake} {
		if err = unix.EpollCtl(l.poll.Fd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			return fail("epoll_ctl", err)
		}
	}
	return l, nil
}

// closeAll closes the loop's connections, listener and epoll instance
// (not its wake-up fd, which Close may still write to).
func (l *eloop) closeAll() {
	for _, c := range l.conns {
		if c != nil {
			unix.Close(c.Fd) //nolint:errcheck
		}
	}
	l.conns, l.idle = nil, nil
	for _, fd := range []int{l.ln, l.poll.Fd} {
		if fd >= 0 {
			unix.Close(fd) //nolint:errcheck
		}
	}
	l.ln, l.poll.Fd = -1, -1
}

// run waits for events and handles them until the wake-up fd is written.
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
		for _, ev := range l.poll.Events[:n] {
			switch fd := int(ev.Fd); fd {
			case l.wake:
				return nil
			case l.ln:
				if err := l.accept(); err != nil {
					return err
				}
			default:
				// A connection closed earlier in this batch may have had
				// its fd given to a new one: seq tells them apart.
				if fd < len(l.conns) && l.conns[fd] != nil && l.conns[fd].seq == uint32(ev.Pad) {
					l.event(l.conns[fd], ev.Events)
				}
			}
		}
	}
}

// wait is epoll_wait, through RawSyscall with raw (see serveEpoll).
func (l *eloop) wait() (int, error) {
	if !l.raw {
		return l.poll.Wait(-1)
	}
	return l.poll.WaitRaw(10)
}

// accept takes up to 64 new clients off the listener's backlog (it is
// level-triggered: what is left is reported again).
func (l *eloop) accept() error {
	for range 64 {
		fd, _, err := unix.Accept4(l.ln, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		switch err {
		case nil:
		case unix.EAGAIN:
			return nil
		case unix.EINTR, unix.ECONNABORTED:
			continue
		default:
			return fmt.Errorf("epoll server: accept: %w", err)
		}
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1) //nolint:errcheck
		c, err := l.add(fd, false)
		if err != nil {
			return err
		}
		c.WriteReady = true
	}
	return nil
}

// dial opens a new upstream connection; the connect completes in the loop.
func (l *eloop) dial() (*econn, error) {
	fd, connecting, err := epoll.Dial(l.upstream)
	if err != nil {
		return nil, fmt.Errorf("epoll server: upstream: %w", err)
	}
	u, err := l.add(fd, true)
	if err != nil {
		return nil, err
	}
	u.connecting = connecting
	u.WriteReady = !connecting
	return u, nil
}

// add registers fd, edge-triggered for both directions.
func (l *eloop) add(fd int, upstream bool) (*econn, error) {
	seq, err := l.poll.Add(fd)
	if err != nil {
		unix.Close(fd) //nolint:errcheck
		return nil, fmt.Errorf("epoll server: epoll_ctl add: %w", err)
	}
	c := &econn{Conn: epoll.Conn{Fd: fd, Syscall: !l.raw, In: make([]byte, 0, 4096)}, seq: seq, upstream: upstream, length: -1}
	for len(l.conns) <= fd {
		l.conns = append(l.conns, nil)
	}
	l.conns[fd] = c
	return c, nil
}

// close closes c, and the other end of an exchange it is in.
func (l *eloop) close(c *econn) {
	if p := c.peer; p != nil {
		c.peer, p.peer = nil, nil
		if c.upstream {
			l.respond(p, http.StatusBadGateway, nil)
		} else {
			l.close(p) // its answer has nobody to go to
		}
	}
	if l.conns[c.Fd] == c {
		l.conns[c.Fd] = nil
	}
	unix.Close(c.Fd) //nolint:errcheck
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

	start int
	peer  *econn // the other end of the exchange in progress, or nil

	// Client connections.
	state   int
	keep    bool   // the client keeps the connection after this response
	driving bool   // driveClient is on the stack: respond leaves the writing to it
	req     []byte // the request to send upstream, kept for a retry

	// Upstream connections.
	connecting bool
	reused     bool // taken from the idle list for this exchange
	headLen    int  // the response head's length once parsed
	length     int  // its body's length; -1 until the head is parsed, or up to EOF after
	status     int
	upKeep     bool // the upstream keeps the connection after this response
}

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
	c.driving = true
	defer func() { c.driving = false }()
	// Each pass writes a response or starts a request (which must then
	// wait upstream) or reads: a bounded number before one waits.
	for !c.closed {
		switch c.state {
		case clientWriting:
			done, err := c.Flush()
			if err != nil || done && !c.keep {
				l.close(c)
				return
			}
			if !done {
				return
			}
			c.state = clientReading
		case clientReading:
			end := h1.HeadEnd(c.In[c.start:])
			if end < 0 {
				if !c.ReadReady {
					return
				}
				if c.start > 0 {
					c.In = c.In[:copy(c.In, c.In[c.start:])]
					c.start = 0
				}
				if len(c.In) == cap(c.In) {
					l.close(c) // a request head of 4 KiB or more: not for this floor
					return
				}
				if _, err := c.Fill(); err != nil {
					l.close(c)
					return
				}
				continue
			}
			head := c.In[c.start : c.start+end]
			uri, host, keep, ok := parseRequest(head)
			if !ok {
				l.close(c)
				return
			}
			c.req = append(append(append(append(append(c.req[:0],
				"GET "...), uri...), " HTTP/1.1\r\nHost: "...), host...), "\r\n\r\n"...)
			c.keep = keep
			// What follows the head is the next request, pipelined.
			if c.start += end; c.start == len(c.In) {
				c.In, c.start = c.In[:0], 0
			}
			c.state = clientWaiting
			l.forward(c)
		case clientWaiting:
			return
		}
	}
}

// forward sends c.req on an idle upstream connection, or a new one.
func (l *eloop) forward(c *econn) {
	var u *econn
	if n := len(l.idle); n > 0 {
		u = l.idle[n-1]
		l.idle = l.idle[:n-1]
		u.reused = true
	} else {
		var err error
		if u, err = l.dial(); err != nil {
			l.respond(c, http.StatusBadGateway, nil)
			return
		}
		u.reused = false
	}
	u.Out, u.Sent = c.req, 0
	u.peer, c.peer = c, u
	l.driveUpstream(u)
}

// respond makes status and body c's response and writes it, unless
// driveClient is already on c's stack and will.
func (l *eloop) respond(c *econn, status int, body []byte) {
	c.Out = append(c.Out[:0], "HTTP/1.1 "...)
	c.Out = strconv.AppendInt(c.Out, int64(status), 10)
	c.Out = append(c.Out, ' ')
	c.Out = append(c.Out, http.StatusText(status)...)
	c.Out = append(c.Out, "\r\nContent-Type: text/plain\r\nContent-Length: "...)
	c.Out = strconv.AppendInt(c.Out, int64(len(body)), 10)
	if !c.keep {
		c.Out = append(c.Out, "\r\nConnection: close"...)
	}
	c.Out = append(c.Out, "\r\n\r\n"...)
	c.Out = append(c.Out, body...)
	c.Sent = 0
	c.state = clientWriting
	if !c.driving {
		l.driveClient(c)
	}
}

// driveUpstream moves upstream connection u on as far as it can go
// without waiting.
func (l *eloop) driveUpstream(u *econn) {
	if u.peer == nil {
		// Idle: an event now means the upstream closed it, or is stale.
		if u.ReadReady {
			if n, err := u.Fill(); n > 0 || err != nil {
				l.dropIdle(u)
			}
		}
		return
	}
	if u.connecting {
		if !u.WriteReady {
			return
		}
		if u.ConnectError() != nil {
			l.upstreamFailed(u)
			return
		}
		u.connecting = false
	}
	if done, err := u.Flush(); err != nil {
		l.upstreamFailed(u)
		return
	} else if !done {
		return
	}
	// Each pass parses or reads: a bounded number before one waits.
	for {
		if u.length < 0 && u.headLen == 0 {
			if end := h1.HeadEnd(u.In); end >= 0 {
				status, length, keep, ok := parseResponse(u.In[:end])
				if !ok {
					u.upKeep = false
					l.upstreamFailed(u)
					return
				}
				u.headLen, u.length, u.status, u.upKeep = end, length, status, keep
				if length > 0 && cap(u.In) < end+length {
					in := make([]byte, len(u.In), end+length)
					copy(in, u.In)
					u.In = in
				}
			}
		}
		if u.headLen > 0 && u.length >= 0 && len(u.In) >= u.headLen+u.length {
			l.deliver(u)
			return
		}
		if !u.ReadReady {
			return
		}
		if len(u.In) == cap(u.In) {
			if u.headLen == 0 {
				l.upstreamFailed(u) // a response head of 4 KiB or more
				return
			}
			u.In = append(u.In, 0)[:len(u.In)] // a body up to EOF: grow
		}
		n, err := u.Fill()
		if err == io.EOF && u.headLen > 0 && u.length < 0 {
			u.length = len(u.In) - u.headLen
			l.deliver(u)
			return
		}
		if err != nil {
			l.upstreamFailed(u)
			return
		}
		if n == 0 {
			return
		}
	}
}

// deliver gives u's response to its client, and keeps u if it can serve
// another.
func (l *eloop) deliver(u *econn) {
	c := u.peer
	u.peer, c.peer = nil, nil
	// Bytes past the response are none the floor asked for: do not reuse.
	keep := u.upKeep && len(u.In) == u.headLen+u.length
	status, body := u.status, u.In[u.headLen:u.headLen+u.length]
	// respond copies the body before u's buffer can be read into again.
	u.Out, u.Sent = nil, 0
	u.headLen, u.length = 0, -1
	if keep {
		u.In = u.In[:0]
		if cap(u.In) > 64<<10 {
			u.In = make([]byte, 0, 4096)
		}
	}
	if !keep || len(l.idle) >= l.keep {
		defer l.close(u)
	} else {
		l.idle = append(l.idle, u)
	}
	l.respond(c, status, body)
}

// upstreamFailed closes u. If u was a reused connection that gave nothing
// back, the upstream closed it while it was idle, and the request goes on
// another; otherwise the client has a 502.
func (l *eloop) upstreamFailed(u *econn) {
	c := u.peer
	retry := u.reused && len(u.In) == 0
	u.peer, c.peer = nil, nil
	l.close(u)
	if retry {
		l.forward(c)
		return
	}
	l.respond(c, http.StatusBadGateway, nil)
}

// dropIdle closes idle upstream connection u.
func (l *eloop) dropIdle(u *econn) {
	for i, v := range l.idle {
		if v == u {
			l.idle = append(l.idle[:i], l.idle[i+1:]...)
			break
		}
	}
	l.close(u)
}

// errBadHead is what the parsers say of a head they do not take.
var errBadHead = errors.New("bad head")

// parseRequest reads a request head (blank line included) as far as the
// floor needs: the URI, the Host, whether the client keeps the connection.
// It takes no request with a body.
func parseRequest(head []byte) (uri, host []byte, keep, ok bool) {
	line, rest := cutLine(head)
	method, line := cutByte(line, ' ')
	uri, proto := cutByte(line, ' ')
	if len(method) == 0 || len(uri) == 0 {
		return nil, nil, false, false
	}
	switch string(proto) {
	case "HTTP/1.1":
		keep = true
	case "HTTP/1.0":
	default:
		return nil, nil, false, false
	}
	for {
		line, rest = cutLine(rest)
		if len(line) == 0 {
			return uri, host, keep, true
		}
		name, value, err := headerField(line)
		switch {
		case err != nil:
			return nil, nil, false, false
		case h1.EqualFold(name, "host"):
			host = value
		case h1.EqualFold(name, "connection"):
			if h1.EqualFold(value, "close") {
				keep = false
			} else if h1.EqualFold(value, "keep-alive") {
				keep = true
			}
		case h1.EqualFold(name, "content-length"):
			if string(value) != "0" {
				return nil, nil, false, false
			}
		case h1.EqualFold(name, "transfer-encoding"):
			return nil, nil, false, false
		}
	}
}

// parseResponse reads a response head (blank line included): its status,
// its body's length (-1: up to EOF) and whether the upstream keeps the
// connection. It takes no chunked body and no 1xx.
func parseResponse(head []byte) (status, length int, keep, ok bool) {
	line, rest := cutLine(head)
	proto, line := cutByte(line, ' ')
	code, _ := cutByte(line, ' ')
	status, err := digits(code)
	if err != nil || len(code) != 3 || status < 200 {
		return 0, 0, false, false
	}
	switch string(proto) {
	case "HTTP/1.1":
		keep = true
	case "HTTP/1.0":
	default:
		return 0, 0, false, false
	}
	length = -1
	for {
		line, rest = cutLine(rest)
		if len(line) == 0 {
			break
		}
		name, value, err := headerField(line)
		switch {
		case err != nil:
			return 0, 0, false, false
		case h1.EqualFold(name, "content-length"):
			if length, err = digits(value); err != nil {
				return 0, 0, false, false
			}
		case h1.EqualFold(name, "connection"):
			if h1.EqualFold(value, "close") {
				keep = false
			}
		case h1.EqualFold(name, "transfer-encoding"):
			return 0, 0, false, false
		}
	}
	if status == http.StatusNoContent || status == http.StatusNotModified {
		length = 0
	}
	if length < 0 {
		keep = false
	}
	return status, length, keep, true
}

// cutLine splits b after its first CRLF.
func cutLine(b []byte) (line, rest []byte) {
	for i := 1; i < len(b); i++ {
		if b[i] == '\n' && b[i-1] == '\r' {
			return b[:i-1], b[i+1:]
		}
	}
	return b, nil
}

// cutByte splits b around its first sep; after is empty without one.
func cutByte(b []byte, sep byte) (before, after []byte) {
	for i, c := range b {
		if c == sep {
			return b[:i], b[i+1:]
		}
	}
	return b, nil
}

// headerField splits "Name: value", the value trimmed of blanks.
func headerField(line []byte) (name, value []byte, err error) {
	name, value = cutByte(line, ':')
	if len(name) == 0 || len(name) == len(line) {
		return nil, nil, errBadHead
	}
	for len(value) > 0 && (value[0] == ' ' || value[0] == '\t') {
		value = value[1:]
	}
	for len(value) > 0 && (value[len(value)-1] == ' ' || value[len(value)-1] == '\t') {
		value = value[:len(value)-1]
	}
	return name, value, nil
}

// digits is b as a decimal number of at most 18 digits.
func digits(b []byte) (int, error) {
	if len(b) == 0 || len(b) > 18 {
		return 0, errBadHead
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errBadHead
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}
