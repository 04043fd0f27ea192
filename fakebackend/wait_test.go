package fakebackend

import (
	"net/http"
	"net/url"
	"testing"
	"testing/synctest"
	"time"

	"stampede/workerpool"
)

// waitURL returns WaitPath with query q.
func waitURL(q url.Values) string {
	if q == nil {
		return WaitPath
	}
	return WaitPath + "?" + q.Encode()
}

// fullBackend returns a backend whose only worker is busy for a minute and
// whose backlog is none, so that a request needing a worker is refused.
// The busy request's connection is dropped when the test ends.
func fullBackend(t *testing.T) (*Backend, *call) {
	t.Helper()
	b := mustNew(t, Options{Pool: workerpool.Config{Workers: 1, Backlog: -1}, Routes: []Route{{Name: "busy", Path: "/", Service: workerpool.Constant{D: time.Minute}}}})
	busy := serve(t, b, "/busy")
	t.Cleanup(func() { // in the bubble, before it must be idle
		b.Close()
		<-busy.done
	})
	return b, busy
}

func TestWaitPathAnswersWithoutWorker(t *testing.T) {
	cases := []struct {
		query url.Values
		took  time.Duration
	}{
		{url.Values{"wait": {"5ms"}}, 5 * time.Millisecond},
		{url.Values{"wait": {"0s"}}, 0},
		{url.Values{"wait": {"0"}}, 0},
		{url.Values{"wait": {"250us"}, "x": {"1"}}, 250 * time.Microsecond},
		{url.Values{"wait": {"1s"}}, time.Second}, // the bound itself
		{url.Values{"wait": {"999.999999ms"}}, 999999999 * time.Nanosecond},
	}
	synctest.Test(t, func(t *testing.T) {
		b, busy := fullBackend(t)
		for i, c := range cases {
			w := serve(t, b, waitURL(c.query))
			if got := w.took(); got != c.took || w.aborted || w.rec.Code != http.StatusNoContent || w.rec.Body.Len() != 0 {
				t.Errorf("step %d: %s: took %v aborted %v status %d body %q, want %v and an empty 204",
					i, w.path, got, w.aborted, w.rec.Code, w.rec.Body, c.took)
			}
		}
		// Every worker stayed busy and nothing else reached the pool.
		s := b.Snapshot()
		if s.Arrived != 1 || s.Busy != 1 || s.Queued != 0 || s.Refused != 0 || s.Routes[0].Arrived != 1 {
			t.Errorf("stats %+v: want the busy request alone arrived and nothing refused", s)
		}
		if busy.ended() {
			t.Errorf("the busy request ended early")
		}
	})
}

func TestWaitPathConcurrent(t *testing.T) {
	// Waits run side by side, however many: none takes a worker or a
	// place in the backlog.
	synctest.Test(t, func(t *testing.T) {
		b, _ := fullBackend(t)
		var calls []*call
		for range 20 {
			calls = append(calls, serve(t, b, waitURL(url.Values{"wait": {"5ms"}})))
		}
		for i, c := range calls {
			if got := c.took(); got != 5*time.Millisecond || c.rec.Code != http.StatusNoContent {
				t.Errorf("step %d: took %v status %d, want 5ms and 204", i, got, c.rec.Code)
			}
		}
		if s := b.Stats(); s.Arrived != 1 || s.Refused != 0 {
			t.Errorf("arrived %d refused %d, want 1 and 0", s.Arrived, s.Refused)
		}
	})
}

func TestWaitPathRejects(t *testing.T) {
	cases := []url.Values{
		nil,                             // no query
		{"x": {"5ms"}},                  // no wait
		{"wait": {""}},                  // empty
		{"wait": {"5"}},                 // no unit
		{"wait": {"fast"}},              // not a duration
		{"wait": {"-1ms"}},              // negative
		{"wait": {"-0.5s"}},             // negative
		{"wait": {"1.000000001s"}},      // just over the bound
		{"wait": {"2s"}},                // over the bound
		{"wait": {"1h"}},                // far over
		{"wait": {"9999999999999999h"}}, // overflows a Duration
	}
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Options{Pool: workerpool.Config{Workers: 1}})
		for i, q := range cases {
			w := serve(t, b, waitURL(q))
			if got := w.took(); got != 0 || w.aborted || w.rec.Code != http.StatusBadRequest {
				t.Errorf("step %d: %s: took %v aborted %v status %d, want an immediate 400", i, w.path, got, w.aborted, w.rec.Code)
			}
		}
		if s := b.Stats(); s.Arrived != 0 {
			t.Errorf("arrived %d, want 0: a bad wait reaches no worker", s.Arrived)
		}
	})
}

func TestWaitPathClientLeaves(t *testing.T) {
	// The wait ends when the client goes away, not at its time: a
	// calibration that is cancelled holds no goroutine for up to a second.
	synctest.Test(t, func(t *testing.T) {
		b, _ := fullBackend(t)
		w := serve(t, b, waitURL(url.Values{"wait": {"1s"}}))
		time.Sleep(100 * time.Millisecond)
		w.cancel()
		if got := w.took(); got != 100*time.Millisecond || w.aborted {
			t.Errorf("took %v aborted %v, want a return at 100ms", got, w.aborted)
		}
	})
}

func FuzzWaitPath(f *testing.F) {
	for _, s := range []string{"5ms", "0", "1s", "1.000000001s", "-1ms", "", "5", "1e3ms", "+3ms", ".5s", "1h", "1s-1ns", "µs"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, wait string) {
		d, err := time.ParseDuration(wait)
		ok := err == nil && d >= 0 && d <= time.Second
		synctest.Test(t, func(t *testing.T) {
			b := mustNew(t, Options{Pool: workerpool.Config{Workers: 1}})
			w := serve(t, b, waitURL(url.Values{"wait": {wait}}))
			got := w.took()
			switch {
			case ok && (got != d || w.rec.Code != http.StatusNoContent):
				t.Errorf("wait=%q: took %v status %d, want %v and 204", wait, got, w.rec.Code, d)
			case !ok && (got != 0 || w.rec.Code != http.StatusBadRequest):
				t.Errorf("wait=%q: took %v status %d, want an immediate 400", wait, got, w.rec.Code)
			}
			if s := b.Stats(); s.Arrived != 0 {
				t.Errorf("wait=%q: arrived %d, want 0", wait, s.Arrived)
			}
		})
	})
}
