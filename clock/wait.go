package clock

import (
	"context"
	"sync/atomic"
	"time"
)

// Coarse is how near the deadline a precise Wait longer than Span stops
// trusting the runtime's timer.
const Coarse = 1500 * time.Microsecond

// Span is the longest precise Wait timed by a high-resolution timer alone;
// a longer one waits on the runtime's timer until Coarse before its
// deadline. Most waits of a load generator at hundreds of sends a second
// fit in it, and each then wakes the process once rather than twice.
const Span = 50 * time.Millisecond

// Wait waits until deadline or until ctx is done, whichever comes first,
// and reports whether it reached the deadline; it never returns true before
// the deadline. A nil ctx never ends. Without precise it waits on the
// runtime's timer alone, which is what testing/synctest's fake clock needs.
func Wait(ctx context.Context, deadline time.Time, precise bool) bool {
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	for {
		d := time.Until(deadline)
		if d <= 0 {
			if precise {
				recordWake(-d)
			}
			return true
		}
		select {
		case <-done:
			return false
		default:
		}
		if precise && d <= Span && hr.sleep(ctx, d) {
			continue
		}
		if precise && d > Span {
			d -= Coarse
		}
		t := time.NewTimer(d)
		select {
		case <-done:
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// MaxLead bounds how early a Pacer aims.
const MaxLead = 500 * time.Microsecond

// A Pacer waits for a stream of moments, such as the sends of a load
// generator, aiming early by how late its wake-ups have come: a precise Wait
// still wakes tens of microseconds late (the kernel's timer, then the
// runtime's poller and scheduler), which a time scale of 0.01 turns into
// milliseconds of model time on every send. The lead follows the median of
// the lateness it sees, a step at a time, so that about half the wake-ups
// come before their deadline and half after. A load generator that counts
// latency from the earlier of the deadline and the moment it sent loses no
// accuracy by sending early, and stops adding the timers' lateness to
// every latency.
//
// The zero value is ready to use and starts with no lead. A Pacer is safe
// for concurrent use; its waiters share one lead.
type Pacer struct {
	lead  atomic.Int64  // nanoseconds, 0..MaxLead
	woken atomic.Uint64 // wake-ups that moved the lead
}

// How far one wake-up moves a Pacer's lead: the first few take long
// strides to find the timers' usual lateness, the rest short ones, so that
// a late outlier barely moves it.
const (
	leadStride  = 16 * time.Microsecond
	leadStep    = 2 * time.Microsecond
	leadStrides = 32
)

// Wait waits until about deadline, or until ctx is done, on precise timers,
// and reports whether the moment came. It may return up to MaxLead before
// deadline. Slept reports whether it had to wait at all: only then does
// how late the caller acted say anything about the timers, and the caller
// should tell Observe.
func (p *Pacer) Wait(ctx context.Context, deadline time.Time) (slept, ok bool) {
	target := deadline.Add(-time.Duration(p.lead.Load()))
	slept = time.Until(target) > 0
	return slept, Wait(ctx, target, true)
}

// Lead returns how early the Pacer aims now, for a waiter that waits by
// itself (an event loop's poll timeout) and aims at deadline less the
// lead, as Wait does; it should tell Observe how late it acted when it
// had to wait.
func (p *Pacer) Lead() time.Duration { return time.Duration(p.lead.Load()) }

// Observe tells the Pacer how late after its deadline a Wait's caller
// acted: when it woke, or better when it did what it waited to do, which
// may be on another goroutine. Negative means early. The lead moves a step
// towards making such a wake-up on time.
func (p *Pacer) Observe(late time.Duration) {
	step := int64(leadStep)
	if p.woken.Add(1) <= leadStrides {
		step = int64(leadStride)
	}
	if late < 0 {
		step = -step
	}
	for {
		old := p.lead.Load()
		v := min(max(old+step, 0), int64(MaxLead))
		if v == old || p.lead.CompareAndSwap(old, v) {
			return
		}
	}
}
