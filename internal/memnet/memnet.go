package memnet

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Network is the network name of memnet addresses.
const Network = "mem"

// Overflow says what a dial does when the accept queue is full.
type Overflow int

const (
	// Retry waits and tries again on the Listener's retry schedule until
	// the dial's context ends, as a client's retransmitted SYN does when
	// Linux drops it (tcp_abort_on_overflow=0, the default).
	Retry Overflow = iota
	// Refuse fails the dial at once with ECONNRESET, as Linux resets a
	// connection that finds the queue full with tcp_abort_on_overflow=1.
	Refuse
)

// DefaultBacklog is the accept queue's capacity when Options.Backlog is
// zero: Linux's default somaxconn.
const DefaultBacklog = 4096

// SYNSchedule is the Linux client's SYN retransmission schedule, the
// default Options.RetryAfter: the wait after the n-th SYN (from 1) is 1 s
// doubled n-1 times, and after the sixth retransmission connect gives up
// (tcp_syn_retries = 6; workerpool.SYNRetry is the same rule).
func SYNSchedule(n int) (time.Duration, bool) {
	n = max(n, 1)
	return time.Second << min(n-1, 6), n <= 6
}

// Options configure Listen. The zero value is a listener at 127.0.0.1:1
// with a DefaultBacklog queue whose overflowing dials retry on
// SYNSchedule.
type Options struct {
	// Addr is the listener's address, which its connections' LocalAddr
	// report on the accepting side. The zero value means 127.0.0.1:1.
	Addr netip.AddrPort
	// Backlog is the accept queue's capacity. Zero means DefaultBacklog;
	// negative means none: a dial succeeds only when Accept is waiting.
	Backlog int
	// Overflow is what a dial does when the queue is full.
	Overflow Overflow
	// RetryAfter, with Retry, returns the wall time to wait after the
	// n-th attempt (n from 1) and whether to try again after it; a dial
	// whose schedule ends fails with ETIMEDOUT. Nil means SYNSchedule. A
	// time-scaled caller scales the schedule here.
	RetryAfter func(n int) (time.Duration, bool)
}

// Listener is an in-memory net.Listener. It is safe for concurrent use.
type Listener struct {
	addr     Addr
	queue    chan net.Conn
	done     chan struct{}
	once     sync.Once
	overflow Overflow
	retry    func(int) (time.Duration, bool)
	ports    atomic.Uint32

	refused  atomic.Uint64
	retried  atomic.Uint64
	accepted atomic.Uint64
}

// Listen returns a listener configured by opts.
func Listen(opts Options) *Listener {
	addr := opts.Addr
	if !addr.IsValid() {
		addr = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 1)
	}
	backlog := opts.Backlog
	if backlog == 0 {
		backlog = DefaultBacklog
	}
	l := &Listener{
		addr:     Addr(addr),
		done:     make(chan struct{}),
		overflow: opts.Overflow,
		retry:    opts.RetryAfter,
	}
	if backlog < 0 {
		l.queue = make(chan net.Conn)
	} else {
		l.queue = make(chan net.Conn, backlog)
	}
	if l.retry == nil {
		l.retry = SYNSchedule
	}
	l.ports.Store(32767) // Linux's ip_local_port_range starts at 32768
	return l
}

// Addr returns the listener's address.
func (l *Listener) Addr() net.Addr { return l.addr }

// Accept waits for and returns the next connection in the queue.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.queue:
		l.accepted.Add(1)
		return c, nil
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: Network, Addr: l.addr, Err: net.ErrClosed}
	}
}

// Close closes the listener: Accept and Dial fail from now on, and the
// connections still in the queue are closed, which their clients see as a
// reset.
func (l *Listener) Close() error {
	l.once.Do(func() {
		close(l.done)
		for {
			select {
			case c := <-l.queue:
				c.Close()
			default:
				return
			}
		}
	})
	return nil
}

// Stats are a Listener's counts so far.
type Stats struct {
	Accepted uint64 // connections Accept returned
	Refused  uint64 // dials refused because the queue was full (Refuse)
	Retried  uint64 // retries of dials that found the queue full (Retry)
}

// Stats returns the listener's counts.
func (l *Listener) Stats() Stats {
	return Stats{Accepted: l.accepted.Load(), Refused: l.refused.Load(), Retried: l.retried.Load()}
}

// ErrRefused is wrapped by the error of a dial refused because the accept
// queue was full under Refuse, or because the listener is closed.
var ErrRefused = syscall.ECONNRESET

// Dial connects to l from the address from (zero for 127.0.0.1), with an
// ephemeral port of its own, as a TCP connect returns: once the connection
// is in the accept queue, before it is accepted. A full queue refuses or
// retries per the listener's Overflow; a dial that is still retrying when
// ctx ends fails with ctx's error, a timeout.
func (l *Listener) Dial(ctx context.Context, from netip.Addr) (net.Conn, error) {
	if !from.IsValid() {
		from = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	local := Addr(netip.AddrPortFrom(from, l.port()))
	client, server := newPipe()
	client.localAddr, client.remoteAddr = local, l.addr
	server.localAddr, server.remoteAddr = l.addr, local
	fail := func(err error) (net.Conn, error) {
		client.Close()
		server.Close()
		return nil, &net.OpError{Op: "dial", Net: Network, Source: local, Addr: l.addr, Err: err}
	}
	for n := 1; ; n++ {
		// Closed or cancelled first: a select picks among ready cases at
		// random.
		select {
		case <-l.done:
			return fail(syscall.ECONNREFUSED)
		case <-ctx.Done():
			return fail(ctx.Err())
		default:
		}
		select {
		case l.queue <- server:
			return client, nil
		default:
		}
		if l.overflow == Refuse {
			l.refused.Add(1)
			return fail(ErrRefused)
		}
		wait, again := l.retry(n)
		t := time.NewTimer(wait)
		select {
		case <-l.done:
			t.Stop()
			return fail(syscall.ECONNREFUSED)
		case <-ctx.Done():
			t.Stop()
			return fail(ctx.Err())
		case <-t.C:
			// Room that appeared meanwhile is seen only now, as the
			// kernel sees a dropped SYN's retransmission only.
			if !again {
				return fail(syscall.ETIMEDOUT)
			}
			l.retried.Add(1)
		}
	}
}

// DialContext is Dial from 127.0.0.1 in the shape of
// net.Dialer.DialContext, for an http.Transport; network and address are
// not looked at: the listener is the only host.
func (l *Listener) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return l.Dial(ctx, netip.Addr{})
}

// port returns the next ephemeral port, wrapping within 32768..65535.
func (l *Listener) port() uint16 {
	p := l.ports.Add(1)
	return uint16(32768 + (p-32768)%32768)
}

// Addr is a memnet address: an IP address and a port, as a TCP address
// has, on network "mem". Its String is the address and port, as
// net.TCPAddr's, so that code splitting a RemoteAddr into host and port
// works unchanged.
type Addr netip.AddrPort

// Network returns "mem".
func (a Addr) Network() string { return Network }

// String returns the address as host:port.
func (a Addr) String() string { return netip.AddrPort(a).String() }

// String describes the listener for errors and logs.
func (l *Listener) String() string { return fmt.Sprintf("memnet listener %s", l.addr) }
