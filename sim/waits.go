package sim

// waits holds the timeouts of requests waiting in the backend's backlog,
// in the order they were scheduled, as long as that is also their order by
// (at, seq). Nearly every such timeout goes stale, as its job starts first
// and its end is scheduled instead: in the calendar they made most of its
// events (24,000 of 31,000 pending at 2,500 tenants, two minutes out) and
// deepened the heap every other event goes through. Here a timeout costs an
// append, and a stale one is taken off the head as soon as its job starts
// (engine.trimWaits), so that the waits hold about the jobs in the backlog.
// The zero value is empty.
type waits struct {
	ring []event // a ring of len a power of two; ring[head&mask] is the earliest
	head int
	n    int
}

// len returns the number of timeouts held, stale ones included.
func (w *waits) len() int { return w.n }

// top returns the earliest. w must not be empty.
func (w *waits) top() *event { return &w.ring[w.head&(len(w.ring)-1)] }

// fits reports whether ev may be pushed: it is not before the latest held.
func (w *waits) fits(ev *event) bool {
	return w.n == 0 || !ev.before(&w.ring[(w.head+w.n-1)&(len(w.ring)-1)])
}

// push adds ev, which must fit.
func (w *waits) push(ev event) {
	if w.n == len(w.ring) {
		w.grow()
	}
	w.ring[(w.head+w.n)&(len(w.ring)-1)] = ev
	w.n++
}

// pop removes and returns the earliest. w must not be empty.
func (w *waits) pop() event {
	ev := *w.top()
	w.head++
	w.n--
	return ev
}

// grow doubles the ring, its events in order from 0.
func (w *waits) grow() {
	ring := make([]event, max(2*len(w.ring), 64))
	for i := range w.n {
		ring[i] = w.ring[(w.head+i)&(len(w.ring)-1)]
	}
	w.ring, w.head = ring, 0
}
