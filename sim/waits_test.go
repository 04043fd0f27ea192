package sim

import (
	"context"
	"testing"
	"time"

	"stampede/workerpool"
)

// TestWaitsOrder pushes timeouts in order past the ring's growth while
// popping some, and takes them back in the same order.
func TestWaitsOrder(t *testing.T) {
	var w waits
	var want []event
	next := 0
	for i := range 1000 {
		ev := event{at: time.Duration(i / 3), seq: uint64(i + 1), ref: int32(i)}
		if !w.fits(&ev) {
			t.Fatalf("event %d does not fit after %d", i, i-1)
		}
		w.push(ev)
		want = append(want, ev)
		if i%3 == 0 {
			if got := w.pop(); got != want[next] {
				t.Fatalf("pop %d = %+v, want %+v", next, got, want[next])
			}
			next++
		}
	}
	for ; w.len() > 0; next++ {
		if got := w.pop(); got != want[next] {
			t.Fatalf("pop %d = %+v, want %+v", next, got, want[next])
		}
	}
	if next != len(want) {
		t.Errorf("popped %d of %d", next, len(want))
	}
	w.push(event{at: 10, seq: 5})
	if early := (event{at: 9, seq: 6}); w.fits(&early) {
		t.Error("an event before the latest fits")
	}
}

// TestWaitsTrimmed plays the stock-balance scenario at 2,500 tenants, where
// the backlog is full and about 100,000 requests wait in it and start
// before their client's timeout: the waits hold about the backlog's
// jobs, not every stale timeout of the last two minutes.
func TestWaitsTrimmed(t *testing.T) {
	sc := stockBalanceFleet(t, 2_500)
	e, err := newEngine(sc, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	e.pool.OnStart = func(j *workerpool.Job) {
		e.starts = append(e.starts, j)
		most = max(most, e.waits.len())
	}
	if err := e.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if backlog := sc.Backend.Backlog; most > 2*backlog || e.stats.Waited < 50_000 {
		t.Errorf("%d requests waited; the waits held up to %d timeouts, want at most twice the backlog's %d", e.stats.Waited, most, backlog)
	}
}
