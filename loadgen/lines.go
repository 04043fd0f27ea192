package loadgen

import (
	"bytes"
	"context"
	"errors"
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

// lineWindow is how much wall time of a rate's sends the open model
// keeps connections open for, beyond the answers' own time (the tare): a
// burst of the sends that a stall of that long held back finds them open
// rather than dialling connections while the run is timed, and so do the
// first sends of the run (see lines.keep).
const lineWindow = 5 * time.Millisecond

// maxKeep bounds the connections the lines of all addresses keep open
// together (lines.keep).
const maxKeep = 1024

// spareLife is the least time a connection dialled ahead must have been
// open for its end to be made good by another when no answer came on it:
// a server that closes idle connections at once is not dialled in a loop.
const spareLife = time.Second

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
	spare bool                 // dialled ahead of any send (lines.keep)
	born  time.Time            // when its dial ended
	// The answer's headers the driver reads, set by header, which
	// onHeader is.
	service  []string
	limited  bool
	onHeader func(name, value []byte)
}

func newLine(p *lines, nc net.Conn) *line {
	ln := &line{p: p, h: h1.NewLine(nc), born: time.Now()}
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
// are kept until the run ends.
//
// Lines are dialled ahead, keep of them, before the run's clock starts
// (connect), and while it runs a line that ends is made good in the
// background, off the send path, while fewer are open: so a server that closes
// connections (after so many requests, or idle ones after a timeout)
// costs no send a dial. Idle lines are taken the last made idle first, so
// that the lines in steady use are few and warm; those below them idle,
// and one a server closes after its idle timeout is dialled again (after
// spareLife). Against a server that closes every connection after its
// answer (a gunicorn sync worker, which holds one a worker accepted until
// its request comes) the lines dialled ahead are taken one after another
// by the first sends, since each ends after its answer.
// The zero value is not ready: see newLines.
type lines struct {
	d       *Driver
	dial    func(ctx context.Context) (net.Conn, error)
	ctx     context.Context
	out     chan<- workload.Result
	pending sync.WaitGroup // sends not yet ended
	owners  sync.WaitGroup // the lines' goroutines

	mu      sync.Mutex
	idle    []*line // the last made idle first: see lines
	all     map[*line]struct{}
	waiting []*send // oldest first
	ndials  int
	closed  bool // aborted: no line is kept or made
	keep    int  // the lines kept open; set before connect and run
	started bool // run was called: the lines' goroutines run
	// spares is the context of the spare lines' dials, which close
	// cancels: a dial the target does not answer must not hold it up.
	spares       context.Context
	cancelSpares context.CancelFunc
}

func newLines(d *Driver, dial func(ctx context.Context) (net.Conn, error)) *lines {
	return &lines{d: d, dial: dial, all: map[*line]struct{}{}}
}

// run readies p for a run under ctx whose results go to out. When ctx ends
// every line is closed and every send waiting is ended.
func (p *lines) run(ctx context.Context, out chan<- workload.Result) (stop func() bool) {
	p.mu.Lock()
	p.ctx, p.out = ctx, out
	p.spares, p.cancelSpares = context.WithCancel(ctx)
	p.started = true
	p.mu.Unlock()
	return context.AfterFunc(ctx, p.abort)
}

// connect dials p.keep lines under ctx, lineDials at a time, before run,
// and makes them idle, each with its goroutine waiting already (which the
// run's first sends should not have to start). A dial that fails ends
// the dialling: the run then dials as its sends need. Run must follow,
// whose end closes them.
func (p *lines) connect(ctx context.Context) {
	var wg sync.WaitGroup
	var failed atomic.Bool
	var left atomic.Int64
	left.Store(int64(p.keep))
	for range min(lineDials, p.keep) {
		wg.Go(func() {
			for !failed.Load() && left.Add(-1) >= 0 {
				nc, err := p.dial(ctx)
				if err != nil {
					failed.Store(true)
					return
				}
				ln := newLine(p, nc)
				ln.spare = true
				ln.state.Store(lineIdle)
				p.mu.Lock()
				p.all[ln] = struct{}{}
				p.idle = append(p.idle, ln)
				p.owners.Add(1)
				p.mu.Unlock()
				go func() {
					defer p.owners.Done()
					ln.own()
				}()
			}
		})
	}
	wg.Wait()
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
	var ln *line
	if err == nil && !p.closed {
		ln = newLine(p, nc)
		p.all[ln] = struct{}{}
	}
	p.dialWaiting()
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

// refill starts dials of spare lines, within lineDials, while fewer than
// p.keep are open or being dialled. p.mu is held.
func (p *lines) refill() {
	for !p.closed && p.started && len(p.all)+p.ndials < p.keep && p.ndials < lineDials {
		p.ndials++
		p.owners.Add(1)
		go p.dialSpare()
	}
}

// dialSpare dials a spare line and owns it: it takes the oldest send
// waiting, or idles. A failed dial starts no other: the next end of a
// line, or the sends, dial again.
func (p *lines) dialSpare() {
	defer p.owners.Done()
	nc, err := p.dial(p.spares)
	p.mu.Lock()
	p.ndials--
	var ln *line
	if err == nil && !p.closed {
		ln = newLine(p, nc)
		ln.spare = true
		p.all[ln] = struct{}{}
	}
	p.dialWaiting()
	p.mu.Unlock()
	if ln == nil {
		if nc != nil {
			nc.Close()
		}
		return
	}
	if ln.release() {
		ln.own()
	}
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
	if p.cancelSpares != nil {
		p.cancelSpares()
	}
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
		// The deadline of the line's last request, which it keeps while
		// it idles, passed: it says nothing of the connection.
		stale := errors.Is(err, os.ErrDeadlineExceeded)
		if s == nil {
			// Idle, and the server closed it or sent what nobody asked
			// for: the line dies; or the stale deadline passed: the line
			// rests with none, as it is the one line whose requests did
			// not come for as long as the client timeout, and ending it
			// would leave the next burst of sends to dial. Unless the
			// scheduler took it meanwhile, whose send is then about to
			// be set.
			for s == nil {
				if stale && ln.state.CompareAndSwap(lineIdle, lineBusy) {
					break
				}
				if !stale && ln.state.CompareAndSwap(lineIdle, lineDead) {
					ln.drop()
					return
				}
				runtime.Gosched()
				s = ln.cur.Load()
			}
			if s == nil {
				ln.h.ClearDeadline()
				if !ln.release() {
					return
				}
				continue
			}
		}
		if stale && (s.deadline.IsZero() || time.Now().Before(s.deadline)) {
			// The stale deadline passed as the scheduler took the line:
			// the send's own is set, or about to be.
			runtime.Gosched()
			continue
		}
		status, keep := 0, false
		ln.service, ln.limited = nil, false
		if err == nil {
			status, keep, err = ln.h.Answer(ln.onHeader)
		} else if (ln.used || ln.spare) && !s.retried && p.ctx.Err() == nil && (s.deadline.IsZero() || time.Now().Before(s.deadline)) {
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

// drop closes ln and forgets it; a spare is dialled in its place when
// the lines kept open fall short and the server keeps connections: it
// kept ln after an answer (ln.used), or ln idled open for spareLife. A
// server that closes every connection after its first answer (a gunicorn
// sync worker), or at once, gets no spares, which would idle, each
// holding a sync worker that accepted it.
func (ln *line) drop() {
	ln.state.Store(lineDead)
	ln.h.Close()
	p := ln.p
	p.mu.Lock()
	delete(p.all, ln)
	p.dialWaiting()
	if ln.used || time.Since(ln.born) >= spareLife {
		p.refill()
	}
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
