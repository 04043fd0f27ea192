package loadgen

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"stampede/scenarios"
	"stampede/workload"
)

// These tests run over loopback in real time. Their bounds hold however
// slow the machine: a handler that waits W makes every measured latency at
// least W, and the sink sees a result only after the driver measured it, so
// the time from a result's intended send to its arrival at the sink is at
// least what the driver measured.

// timedResult is a result with the wall time it reached the sink.
type timedResult struct {
	workload.Result
	at time.Time
}

// timedSink keeps every result with when it arrived.
type timedSink struct{ got []timedResult }

func (s *timedSink) Add(r *workload.Result) { s.got = append(s.got, timedResult{*r, time.Now()}) }

// waitHandler answers status after waiting d, or drops the connection
// without an answer when status is 0. It returns early if the client goes.
func waitHandler(d time.Duration, status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
		if status == 0 {
			panic(http.ErrAbortHandler)
		}
		w.WriteHeader(status)
	}
}

// closedLoad is one closed-model tenant of users × iterations on route 0.
func closedLoad(users, iterations int, think, clientTimeout time.Duration) []scenarios.Tenant {
	return []scenarios.Tenant{{Index: 0, Name: "t", Host: "t.example.com", Load: &scenarios.Load{
		Model: scenarios.Closed, Users: users, Iterations: iterations, Think: think,
		ClientTimeout: clientTimeout, OnTimeout: scenarios.GiveUp, Routes: []scenarios.WeightedRoute{{Route: 0, Weight: 1}}}}}
}

// runTimed runs d from now and returns its results and the start.
func runTimed(t *testing.T, d *Driver) (*timedSink, time.Time) {
	t.Helper()
	var sink timedSink
	start := time.Now()
	if err := d.Run(context.Background(), start, &sink); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return &sink, start
}

// wallOf converts a model duration to wall time at scale.
func wallOf(m time.Duration, scale float64) time.Duration { return time.Duration(float64(m) * scale) }

// roundoff covers the float conversions between wall and model time.
const roundoff = time.Microsecond

// checkLatency checks one result's latency against what the driver can have
// measured: at least the handler's wait, at most until the sink had it,
// with tare (if subtracted) taken off both bounds and never below zero.
func checkLatency(t *testing.T, step string, r timedResult, start time.Time, scale float64, wait, tare time.Duration) {
	t.Helper()
	lat := wallOf(r.Latency, scale)
	seen := r.at.Sub(start.Add(wallOf(r.Intended, scale))) // ≥ what the driver measured
	lo, hi := max(wait-tare, 0), max(seen-tare, 0)
	if r.Latency < 0 || lat < lo-roundoff || lat > hi+roundoff {
		t.Errorf("%s: %v latency %v (wall %v), want wall between %v and %v (wait %v, tare %v, seen by the sink after %v)",
			step, r.Outcome, r.Latency, lat, lo, hi, wait, tare, seen)
	}
}

func TestDriverTareByOutcome(t *testing.T) {
	// The tare comes off the latency of every answered request, whatever
	// its status, and not off a request that got no answer: a client
	// timeout lasted as long as it lasted.
	const wait, tare = 20 * time.Millisecond, 15 * time.Millisecond
	cases := []struct {
		name       string
		status     int           // 0: the connection drops after the wait
		handler    time.Duration // how long the handler waits
		timeout    time.Duration // client timeout, model = wall at scale 1
		want       workload.Outcome
		subtracted bool
	}{
		{"ok", 200, wait, 0, workload.OK, true},
		{"rejected", 503, wait, 0, workload.Rejected, true},
		{"backend error", 502, wait, 0, workload.BackendError, true},
		{"gateway timeout", 504, wait, 0, workload.GatewayTimeout, true},
		{"transport error", 0, wait, 0, workload.Error, false},
		{"client timeout", 200, time.Hour, wait, workload.ClientTimeout, false},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(waitHandler(c.handler, c.status))
			defer srv.Close()
			d := newDriver(t, srv.URL, DriverOptions{
				Tare:      tare,
				Tenants:   closedLoad(2, 2, 0, c.timeout),
				Horizon:   time.Minute,
				TimeScale: 1,
			})
			sink, start := runTimed(t, d)
			// A client timeout gives up the user (GiveUp): one result each.
			want := 4
			if c.want == workload.ClientTimeout {
				want = 2
			}
			if len(sink.got) != want {
				t.Fatalf("step %d: %d results, want %d", i, len(sink.got), want)
			}
			for k, r := range sink.got {
				if r.Outcome != c.want {
					t.Errorf("step %d.%d: outcome %v, want %v", i, k, r.Outcome, c.want)
				}
				sub := time.Duration(0)
				if c.subtracted {
					sub = tare
				}
				checkLatency(t, fmt.Sprintf("step %d.%d", i, k), r, start, 1, wait, sub)
			}
		})
	}
}

func TestDriverTareNeverBelowZero(t *testing.T) {
	srv := httptest.NewServer(waitHandler(time.Millisecond, 200))
	defer srv.Close()
	for i, scale := range []float64{1, 0.1} {
		d := newDriver(t, srv.URL, DriverOptions{
			Tare:      time.Hour,
			Tenants:   closedLoad(1, 3, 0, 0),
			Horizon:   time.Minute,
			TimeScale: scale,
		})
		sink, _ := runTimed(t, d)
		if len(sink.got) != 3 {
			t.Fatalf("step %d: %d results, want 3", i, len(sink.got))
		}
		for k, r := range sink.got {
			if r.Outcome != workload.OK || r.Latency != 0 {
				t.Errorf("step %d.%d: scale %v: %v latency %v, want ok and 0 (the tare is larger than the request)", i, k, scale, r.Outcome, r.Latency)
			}
		}
	}
}

func TestDriverTareComparedWithNone(t *testing.T) {
	// The same load with and without a tare, side by side against one
	// server so that both see the same machine: every latency keeps the
	// hard bounds, and the typical one drops by most of the tare.
	const wait, tare, n = 40 * time.Millisecond, 30 * time.Millisecond, 7
	srv := httptest.NewServer(waitHandler(wait, 200))
	defer srv.Close()
	for i, scale := range []float64{1, 0.5} {
		var (
			wg     sync.WaitGroup
			sinks  [2]*timedSink
			starts [2]time.Time
		)
		tares := [2]time.Duration{0, tare}
		for k := range tares {
			d := newDriver(t, srv.URL, DriverOptions{
				Tare:      tares[k],
				Tenants:   closedLoad(1, n, 0, 0),
				Horizon:   time.Minute,
				TimeScale: scale,
			})
			wg.Go(func() { sinks[k], starts[k] = runTimed(t, d) })
		}
		wg.Wait()
		var medians [2]time.Duration
		for k := range tares {
			if len(sinks[k].got) != n {
				t.Fatalf("step %d: tare %v: %d results, want %d", i, tares[k], len(sinks[k].got), n)
			}
			var lats []time.Duration
			for j, r := range sinks[k].got {
				if r.Outcome != workload.OK {
					t.Errorf("step %d.%d: tare %v: outcome %v, want ok", i, j, tares[k], r.Outcome)
				}
				checkLatency(t, fmt.Sprintf("step %d.%d", i, j), r, starts[k], scale, wait, tares[k])
				lats = append(lats, wallOf(r.Latency, scale))
			}
			slices.Sort(lats)
			medians[k] = lats[len(lats)/2]
		}
		if medians[1] > medians[0]-tare/2 {
			t.Errorf("step %d: scale %v: median wall latency %v with a tare of %v, %v without; want at least %v less",
				i, scale, medians[1], tare, medians[0], tare/2)
		}
		t.Logf("scale %v: median wall latency %v without a tare, %v with %v", scale, medians[0], medians[1], tare)
	}
}

func TestDriverClosedNextSendFromAnswer(t *testing.T) {
	// A user sends again Think after the answer actually came. With a tare
	// larger than the request the latency is 0; scheduling from
	// Intended+Latency would then send the next request before the answer
	// to the last, in the past, and charge the wait to its latency.
	const wait, tare, think, n = 20 * time.Millisecond, 50 * time.Millisecond, 5 * time.Millisecond, 5
	srv := httptest.NewServer(waitHandler(wait, 200))
	defer srv.Close()
	for i, scale := range []float64{1, 0.5} {
		d := newDriver(t, srv.URL, DriverOptions{
			Tare:      tare,
			Tenants:   closedLoad(1, n, think, 0),
			Horizon:   time.Minute,
			TimeScale: scale,
		})
		sink, start := runTimed(t, d)
		if len(sink.got) != n {
			t.Fatalf("step %d: %d results, want %d", i, len(sink.got), n)
		}
		for k, r := range sink.got {
			checkLatency(t, fmt.Sprintf("step %d.%d", i, k), r, start, scale, wait, tare)
			if k == 0 {
				continue
			}
			prev := sink.got[k-1]
			// The answer to prev came at least wait after prev's intended
			// send, in wall time; the next send is think after it.
			gap := wallOf(r.Intended-prev.Intended, scale)
			if want := wait + wallOf(think, scale); gap < want-roundoff {
				t.Errorf("step %d.%d: scale %v: sent %v after the previous request, want at least %v (its wait %v + think %v model)",
					i, k, scale, gap, want, wait, think)
			}
		}
	}
}

func TestDriverSetTareWhileRunning(t *testing.T) {
	// One user, three requests in turn. The first answer's arrival at the
	// sink sets a tare longer than any request; the server holds the second
	// request until then, so it and the third must come back as 0.
	ready := make(chan struct{})
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) > 1 {
			<-ready
		}
	}))
	defer srv.Close()
	defer func() {
		select {
		case <-ready:
		default:
			close(ready)
		}
	}()
	d := newDriver(t, srv.URL, DriverOptions{Tenants: closedLoad(1, 3, 0, 0), Horizon: time.Minute})
	var sink resultSink
	sink.onAdd = func(*workload.Result) {
		if len(sink.got) == 1 {
			d.SetTare(time.Hour)
			close(ready)
		}
	}
	if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(sink.got) != 3 {
		t.Fatalf("%d results, want 3", len(sink.got))
	}
	for i, r := range sink.got {
		if r.Outcome != workload.OK || (i == 0) != (r.Latency > 0) {
			t.Errorf("step %d: %v latency %v, want ok, and above 0 only before the tare was set", i, r.Outcome, r.Latency)
		}
	}
}

func TestDriverEarlySendsNeverShortenLatency(t *testing.T) {
	// A pacer that aims half a millisecond early sends before the
	// intended time; the latency must then count from the send. The
	// server notes how long it held each request: a latency shorter than
	// that was counted from a moment the request had not left yet.
	const wait = 2 * time.Millisecond
	var (
		mu   sync.Mutex
		held []time.Duration
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		waitHandler(wait, 200)(w, r)
		mu.Lock()
		held = append(held, time.Since(arrived))
		mu.Unlock()
	}))
	defer srv.Close()
	// One closed-model user who thinks 8 ms between requests: each send
	// waits on the pacer, and the requests go one after another, so the
	// n-th result is the n-th request the server held.
	d := newDriver(t, srv.URL, DriverOptions{
		PreciseTimers: true,
		Tenants:       closedLoad(1, 100, 8*time.Millisecond, 0),
		Horizon:       time.Minute,
		TimeScale:     1,
	})
	for range 300 {
		d.pacer.Observe(time.Millisecond)
	}
	sink, _ := runTimed(t, d)
	if len(sink.got) != 100 || len(held) != 100 {
		t.Fatalf("%d results, %d served; want 100 of each", len(sink.got), len(held))
	}
	slices.SortFunc(sink.got, func(a, b timedResult) int { return cmp.Compare(a.Intended, b.Intended) })
	early := 0
	for i, r := range sink.got {
		if r.Outcome != workload.OK {
			t.Fatalf("step %d: %v, want ok", i, r.Outcome)
		}
		if r.Late < 0 {
			early++
		}
		if r.Latency < held[i] {
			t.Errorf("step %d: latency %v (sent %d µs late), want at least the %v the server held it", i, r.Latency, r.Late, held[i])
		}
	}
	if l := d.SendLateness(); l.Early != uint64(early) || l.Sends != 100 {
		t.Errorf("send lateness %+v, want 100 sends, %d early as the results say", l, early)
	}
	if early == 0 {
		t.Skip("no send came early (every one woke more than the pacer's lead late): the early case was not exercised")
	}
	t.Logf("%d of 100 sends early", early)
}
