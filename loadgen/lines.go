package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"stampede/internal/h1"
	"stampede/workload"
)

// send is one open-model arrival on its way, from newSend until lines'
// finish, which recycles it.
type send struct {
	sending
	route   int
	retried bool // sent once more after a reused connection failed
}

// sends recycles the sends that ended, which spares an allocation per
// arrival and the collector's work for it.
var sends = sync.Pool{New: func() any { return new(send) }}

func newSend(s sending, route int) *send {
	n := sends.Get().(*send)
	*n = send{sending: s, route: route}
	return n
}

// lineDials bounds the dials in progress of one address's lines (lines),
// much lower than a closed-model client's (maxDials): when the generator
// falls behind, a burst of overdue sends finds every line busy for the
// next few tens of microseconds, and lines coming free take them sooner
// than new connections could. Against nginx's `return 200` at 20k
// arrivals a second on a busy 2-core machine, 64 dials at a time opened
// thousands of connections, whose cost put the generator further behind
// until the in-flight cap dropped arrivals; 4 dropped none.
const lineDials = 4

// States of a line.
const (
	lineBusy int32 = iota // a request is being sent or answered, or the line is dialling
	lineIdle              // in lines.idle, free for the next send
	lineDead              // closed
)

// line is one of the open model's connections, with the goroutine that
// owns it: the scheduler sends a request on an idle line itself (no
// hand-off), and the line's goroutine, parked on the connection, is woken
// by the answer, records it, and makes the line idle again or gives it
// the oldest send waiting for a line.
type line struct {
	p     *lines
	h     *h1.Line
	state atomic.Int32
	cur   atomic.Pointer[send] // the request on the line, set before it is written
	used  bool                 // an answer has come on it; its goroutine's alone
	// The answer's headers the driver reads, set by header, which
	// onHeader is.
	service  []string
	limited  bool
	onHeader func(name, value []byte)
}

func newLine(p *lines, nc net.Conn) *line {
	ln := &line{p: p, h: h1.NewLine(nc)}
	ln.onHeader = ln.header
	return ln
}

// lines are the open model's connections from one source address, and
// the sends waiting for one. A send goes out at once on an idle line, or
// else on a new one that a goroutine of its own dials and then reads; past
// lineDials dials in progress it waits for the first line to come free or
// be dialled, so that a burst of overdue sends does not open connections
// by the thousand. Its lateness counts when the scheduler hands it over
// (it is the generator's), its latency from its intended time. Idle lines
// are kept until the run ends. The zero value is not ready: see newLines.
type lines struct {
	d       *Driver
	dial    func(ctx context.Context) (net.Conn, error)
	ctx     context.Context
	out     chan<- workload.Result
	pending sync.WaitGroup // sends not yet ended
	owners  sync.WaitGroup // the lines' goroutines

	mu      sync.Mutex
	idle    []*line
	all     map[*line]struct{}
	waiting []*send // oldest first
	ndials  int
	closed  bool // aborted: no line is kept or made
}

func newLines(d *Driver, dial func(ctx context.Context) (net.Conn, error)) *lines {
	return &lines{d: d, dial: dial, all: map[*line]struct{}{}}
}

// run readies p for a run under ctx whose results go to out. When ctx ends
// every line is closed and every send waiting is ended.
func (p *lines) run(ctx context.Context, out chan<- workload.Result) (stop func() bool) {
	p.ctx, p.out = ctx, out
	return context.AfterFunc(ctx, p.abort)
}

// send sends s on an idle line, or hands it to a new line or the waiting.
// Only the scheduler calls it.
func (p *lines) send(s *send) {
	p.pending.Add(1)
	p.mu.Lock()
	for len(p.idle) > 0 {
		ln := p.idle[len(p.idle)-1]
		p.idle[len(p.idle)-1] = nil
		p.idle = p.idle[:len(p.idle)-1]
		if ln.state.CompareAndSwap(lineIdle, lineBusy) {
			p.mu.Unlock()
			if !ln.start(s) {
				ln.release()
			}
			return
		}
	}
	if p.closed {
		p.mu.Unlock()
		p.end(s, time.Now(), p.ctx.Err())
		return
	}
	if p.ndials >= lineDials {
		p.waiting = append(p.waiting, s)
		p.mu.Unlock()
		return
	}
	p.ndials++
	p.owners.Add(1)
	p.mu.Unlock()
	go p.dialFor(s)
}

// end records the result of s, which ended at end with err.
func (p *lines) end(s *send, end time.Time, err error) {
	p.finish(s, end, 0, false, nil, err)
}

// finish ends s as the driver's finish does, and recycles s: nobody may
// use it after.
func (p *lines) finish(s *send, end time.Time, status int, limited bool, service []string, err error) {
	if r, ok := p.d.finish(p.ctx, &s.sending, end, status, limited, service, err); ok {
		p.out <- r
	}
	p.d.openFlight.Add(-1)
	s.t.inFlight.Add(-1)
	*s = send{}
	sends.Put(s)
	p.pending.Done()
}

// dialFor dials a new line for s, sends s on it and owns it. A failed dial
// fails s alone; either way the oldest send waiting gets a dial of its
// own if it can.
func (p *lines) dialFor(s *send) {
	defer p.owners.Done()
	nc, err := p.dialBy(s.deadline)
	p.mu.Lock()
	p.ndials--
	p.dialWaiting()
	var ln *line
	if err == nil && !p.closed {
		ln = newLine(p, nc)
		p.all[ln] = struct{}{}
	}
	p.mu.Unlock()
	if ln == nil {
		if nc != nil {
			nc.Close()
		}
		p.end(s, time.Now(), errOr(err, p.ctx.Err()))
		return
	}
	if ln.start(s) || ln.release() {
		ln.own()
	}
}

// dialBy dials within deadline (zero: none).
func (p *lines) dialBy(deadline time.Time) (net.Conn, error) {
	if deadline.IsZero() {
		return p.dial(p.ctx)
	}
	ctx, cancel := context.WithDeadline(p.ctx, deadline)
	defer cancel()
	return p.dial(ctx)
}

// dialWaiting starts a dial for the oldest send waiting, when there is one
// and the dials in progress allow. p.mu is held.
func (p *lines) dialWaiting() {
	if len(p.waiting) == 0 || p.ndials >= lineDials || p.closed {
		return
	}
	s := p.waiting[0]
	p.waiting[0] = nil
	p.waiting = p.waiting[1:]
	p.ndials++
	p.owners.Add(1)
	go p.dialFor(s)
}

// abort closes every line and ends every send waiting, when ctx ended.
func (p *lines) abort() {
	p.mu.Lock()
	p.closed = true
	waiting := p.waiting
	p.waiting = nil
	for ln := range p.all {
		ln.h.Close()
	}
	p.mu.Unlock()
	now := time.Now()
	for _, s := range waiting {
		p.end(s, now, p.ctx.Err())
	}
}

// close waits for every send to end, then closes the lines and waits for
// their goroutines.
func (p *lines) close() {
	p.pending.Wait()
	p.mu.Lock()
	p.closed = true
	for ln := range p.all {
		ln.h.Close()
	}
	p.mu.Unlock()
	p.owners.Wait()
}

// start sends s on ln, which is busy with no request on it, and reports
// true; or, when s waited for a line past its client timeout, ends s and
// reports false, ln still busy. A failed write closes the connection; the
// line's goroutine then sees the end and ends s.
func (ln *line) start(s *send) bool {
	if !s.deadline.IsZero() && !time.Now().Before(s.deadline) {
		ln.p.finish(s, s.deadline, 0, false, nil, errWaitedOut)
		return false
	}
	ln.cur.Store(s)
	if err := ln.h.Send(s.deadline, ln.p.d.uris[s.route], s.t.host); err != nil {
		ln.h.Close()
	}
	return true
}

// header takes the answer's headers the driver reads.
func (ln *line) header(name, value []byte) {
	switch {
	case bytes.EqualFold(name, serviceHeader):
		ln.service = []string{string(value)}
	case bytes.EqualFold(name, limitHeader):
		ln.limited = len(value) > 0
	}
}

// own is the line's goroutine: it waits for each answer, records it, and
// gives the line to the next send, until the connection ends.
func (ln *line) own() {
	p := ln.p
	for {
		err := ln.h.Wait()
		s := ln.cur.Load()
		if s == nil {
			// Idle, and the server closed it or sent what nobody asked
			// for: the line dies, unless the scheduler took it
			// meanwhile, whose send is then about to be set.
			for s == nil {
				if ln.state.CompareAndSwap(lineIdle, lineDead) {
					ln.drop()
					return
				}
				runtime.Gosched()
				s = ln.cur.Load()
			}
		}
		status, keep := 0, false
		ln.service, ln.limited = nil, false
		if err == nil {
			status, keep, err = ln.h.Answer(ln.onHeader)
		} else if ln.used && !s.retried && p.ctx.Err() == nil && (s.deadline.IsZero() || time.Now().Before(s.deadline)) {
			// A reused connection that ended before any byte of the
			// answer: the server closed it while idle. Sent once more on
			// a new one, as http.Transport does.
			s.retried = true
			ln.cur.Store(nil)
			ln.drop()
			p.mu.Lock()
			p.ndials++
			p.owners.Add(1)
			p.mu.Unlock()
			go p.dialFor(s)
			return
		}
		end := time.Now()
		ln.cur.Store(nil)
		p.finish(s, end, status, ln.limited, ln.service, err)
		if err != nil || !keep {
			ln.drop()
			return
		}
		ln.used = true
		if !ln.release() {
			return
		}
	}
}

// release gives the busy line ln, with no request on it, to the oldest
// send waiting, or makes it idle; it reports false when the run was
// aborted and ln closed.
func (ln *line) release() bool {
	p := ln.p
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			ln.drop()
			return false
		}
		if len(p.waiting) == 0 {
			ln.state.Store(lineIdle)
			p.idle = append(p.idle, ln)
			p.mu.Unlock()
			return true
		}
		s := p.waiting[0]
		p.waiting[0] = nil
		p.waiting = p.waiting[1:]
		p.mu.Unlock()
		if ln.start(s) {
			return true
		}
	}
}

// drop closes ln and forgets it.
func (ln *line) drop() {
	ln.state.Store(lineDead)
	ln.h.Close()
	p := ln.p
	p.mu.Lock()
	delete(p.all, ln)
	p.dialWaiting()
	p.mu.Unlock()
}

// errWaitedOut is the error of a send that waited for a line past its
// client timeout.
var errWaitedOut = fmt.Errorf("loadgen: waiting for a connection: %w", os.ErrDeadlineExceeded)

// errOr returns err, or else alt.
func errOr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}
