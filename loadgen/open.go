package loadgen

import (
	"context"
	"time"

	"stampede/clock"
	"stampede/workload"
)

// arrival is an open-model tenant's next intended send time.
type arrival struct {
	at time.Duration
	t  *tenant
}

// before orders arrivals by time, then tenant, so ties go the same way in
// every run.
func (a arrival) before(b arrival) bool {
	return a.at < b.at || a.at == b.at && a.t.index < b.t.index
}

// arrivalHeap is a min-heap of arrivals, one per open-model tenant.
type arrivalHeap []arrival

func (h arrivalHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].before(h[l]) {
			m = r
		}
		if !h[m].before(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// schedule fires every open-model tenant's arrivals at their intended times
// from one timer, each request sent at once on a line of its visitor's
// (lines), whose sends it waits for before returning.
func (d *Driver) schedule(ctx context.Context, start time.Time, open []*tenant, out chan<- workload.Result) {
	for _, p := range d.lines {
		// The sends still in flight end before ctx's end is no longer
		// watched, since it is what cuts them off.
		stop := p.run(ctx, out)
		defer func() {
			p.close()
			stop()
		}()
	}
	h := make(arrivalHeap, 0, len(open))
	for _, t := range open {
		if at, ok := t.arrivals.Next(); ok {
			h = append(h, arrival{at, t})
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
	var woke time.Time // when the scheduler last slept until a send
	for len(h) > 0 {
		a := h[0]
		// A runtime timer alone sends up to a millisecond late, which is
		// 100 ms of model time at 0.01: PreciseTimers times the last
		// stretch with clock's high-resolution timer, aiming early by its
		// usual lateness. A send not yet due but due within sendQuantum
		// of the last wake waits for the next, sendQuantum after it, with
		// the others due by then; a send already due goes at once.
		var paced, ok bool
		slept := false
		due := start.Add(d.scale.Wall(a.at))
		if next := woke.Add(d.quantum); d.opts.PreciseTimers && due.Before(next) && time.Now().Before(due) {
			ok, slept = clock.Wait(ctx, next, true), true
		} else {
			paced, ok = d.wait(ctx, start, a.at)
			slept = paced
		}
		if !ok {
			return
		}
		if ctx.Err() != nil {
			return
		}
		// One clock read for the wake, the stall and the send, which goes
		// out next.
		now := time.Now()
		if slept {
			woke = now
		}
		d.stalls.sent(due, now)
		t := a.t
		route := t.arrivals.RouteOf(t.mix, t.picks)
		if next, ok := t.arrivals.Next(); ok {
			h[0].at = next
		} else {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		h.down(0)

		// Only this goroutine increments the counts, so checking then
		// adding cannot overshoot the caps.
		if !workload.Admit(t.inFlight.Load(), t.cap, d.openFlight.Load(), d.maxFlight) {
			out <- workload.Result{Tenant: t.index, Route: int16(route), Outcome: workload.Dropped, Intended: a.at}
			continue
		}
		t.inFlight.Add(1)
		d.openFlight.Add(1)
		p := t.visitorLines(t.arrived) // each arrival a new visitor
		t.arrived++
		p.send(newSend(d.begin(start, t, route, a.at, now, paced), route))
	}
}
