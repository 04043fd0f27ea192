package h1

import (
	"context"
	"fmt"
	"os"
	"time"
)

// waiter is a request waiting for a connection: the one it dials, or one
// that another exchange puts back first, whichever comes first. Served is
// guarded by the Client's mu; ch, of one slot, gets the connection or the
// dial's error once served is set. It holds the request's context, which
// lives no longer than the request, because past MaxDials the dial is
// started later, by the end of another.
type waiter struct {
	ctx    context.Context
	ch     chan dialed
	served bool
}

type dialed struct {
	c   *conn
	err error
}

// acquire returns a connection watching ctx: an idle one, or else the one
// it dials, unless another exchange puts one back before the dial ends;
// the dial's connection then goes to the pool, or to the next request
// waiting. So a burst of requests that finds every connection busy is
// served at the pace the exchanges end, not at the pace connections are
// made, and each request still starts its dial at once (within MaxDials),
// as it would without a pool. It waits until deadline (zero: none);
// running out of it fails with an error that is os.ErrDeadlineExceeded, as
// an exchange's own deadline does.
func (l *Client) acquire(ctx context.Context, deadline time.Time) (*conn, error) {
	var expire <-chan time.Time
	for {
		if c := l.get(ctx); c != nil {
			return c, nil
		}
		w := &waiter{ctx: ctx, ch: make(chan dialed, 1)}
		l.mu.Lock()
		l.waiting = append(l.waiting, w)
		if l.MaxDials > 0 && l.ndials >= l.MaxDials {
			l.undialed = append(l.undialed, w)
		} else {
			l.startDial(w)
		}
		l.mu.Unlock()
		if expire == nil && !deadline.IsZero() {
			t := time.NewTimer(time.Until(deadline))
			defer t.Stop()
			expire = t.C
		}
		var d dialed
		select {
		case d = <-w.ch:
		case <-ctx.Done():
		case <-expire:
		}
		if d.c == nil && d.err == nil {
			if l.leave(w) {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				return nil, fmt.Errorf("h1: waiting for a connection: %w", os.ErrDeadlineExceeded)
			}
			// Served meanwhile: the connection is this request's to use
			// or give back.
			d = <-w.ch
		}
		if d.err != nil {
			return nil, d.err
		}
		if d.c.watch(ctx) {
			return d.c, nil
		}
		d.c.close()
	}
}

// leave takes w out of the waiting, and reports false when it was served
// first.
func (l *Client) leave(w *waiter) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.served {
		return false
	}
	w.served = true
	return true
}

// startDial starts w's dial. l.mu is held.
func (l *Client) startDial(w *waiter) {
	l.ndials++
	l.dials.Add(1)
	go l.dialFor(w)
}

// dialFor dials a connection for w, and gives it to w while w waits, or
// else to the pool (put). A failed dial fails w alone, and only while it
// waits. The dial's end lets the oldest request still waiting without a
// dial start its own.
func (l *Client) dialFor(w *waiter) {
	defer l.dials.Done()
	var d dialed
	if nc, err := l.Dial(w.ctx); err != nil {
		d.err = err
	} else {
		d.c = newConn(nc)
	}
	l.mu.Lock()
	l.ndials--
	for len(l.undialed) > 0 {
		next := l.undialed[0]
		l.undialed[0] = nil
		l.undialed = l.undialed[1:]
		if !next.served && next != w {
			l.startDial(next)
			break
		}
	}
	mine := !w.served
	w.served = true
	l.mu.Unlock()
	switch {
	case mine:
		w.ch <- d
	case d.c != nil:
		l.put(d.c)
	}
}
