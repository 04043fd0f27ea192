package fakebackend

import (
	"math/rand/v2"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"stampede/workerpool"
)

// These tests pin down that the live Backend keeps the pool in model time:
// a worker is freed, and Finish called, at the model time its work ends
// (Backend.retire over the end-time heap), whichever goroutine happens to
// take b.mu first at that instant. They run in testing/synctest with
// PreciseTimers false, so every time below is exact.

// runningJobs returns the jobs in b's end-time heap that are still running,
// and how many entries the heap holds (cancelled ones are deleted lazily).
func runningJobs(b *Backend) (running []*workerpool.Job, entries int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, j := range b.running.Items() {
		if j.State() == workerpool.Running {
			running = append(running, j)
		}
	}
	return running, b.running.Len()
}

// checkStats compares the counters that say where every request is.
func checkStats(t *testing.T, step string, got workerpool.Stats, busy, queued int, served, killed, cancelled uint64) {
	t.Helper()
	if got.Busy != busy || got.Queued != queued || got.Served != served || got.Killed != killed || got.Cancelled != cancelled {
		t.Errorf("%s: got busy %d queued %d served %d killed %d cancelled %d, want %d %d %d %d %d",
			step, got.Busy, got.Queued, got.Served, got.Killed, got.Cancelled, busy, queued, served, killed, cancelled)
	}
}

func TestRetireHandsWorkerOnAtModelEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Options{Pool: workerpool.Config{Workers: 1}, Routes: []Route{{Name: "two", Path: "/", Service: workerpool.Constant{D: 2 * time.Second}}}})
		a := serve(t, b, "/a")
		q := serve(t, b, "/b")
		checkStats(t, "step 1: at 0", b.Stats(), 1, 1, 0, 0, 0)

		// At exactly 2s this goroutine and a's handler wake together, in
		// either order: Stats must not depend on which one ran first.
		time.Sleep(2 * time.Second)
		checkStats(t, "step 2: at 2s", b.Stats(), 1, 0, 1, 0, 0)
		time.Sleep(time.Nanosecond)
		checkStats(t, "step 3: at 2s+1ns", b.Stats(), 1, 0, 1, 0, 0)

		running, entries := runningJobs(b)
		if len(running) != 1 || entries != 1 {
			t.Fatalf("step 3: %d running jobs in a heap of %d, want b's job alone", len(running), entries)
		}
		j := running[0]
		if got := j.StartedAt(); got != 2*time.Second {
			t.Errorf("step 3: queued job Started at %v, want 2s (a's end in model time)", got)
		}
		if got, _ := b.pool.End(j); got != 4*time.Second {
			t.Errorf("step 3: queued job ends at %v, want 4s", got)
		}

		a.servedIn(t, "step 4: a", 2*time.Second)
		q.servedIn(t, "step 5: b", 4*time.Second)
		s := b.Snapshot()
		checkStats(t, "step 6: at 4s", s.Stats, 0, 0, 2, 0, 0)
		if s.BusyTime != 4*time.Second || s.Elapsed != 4*time.Second || s.Utilization != 1 {
			t.Errorf("step 6: busy time %v elapsed %v utilization %v, want 4s 4s 1", s.BusyTime, s.Elapsed, s.Utilization)
		}
		if r := s.Routes[0]; r.Arrived != 2 || r.Served != 2 {
			t.Errorf("step 6: route %+v, want 2 arrived and 2 served", r)
		}
		if _, entries := runningJobs(b); entries != 0 {
			t.Errorf("step 6: end-time heap holds %d entries, want 0", entries)
		}
	})
}

// ghost gives b a request for path the way ServeHTTP does, but with no
// handler goroutine: it stands in for a handler that has not woken by the
// time its work ends, which a busy machine makes common and synctest never
// does. It returns the request's job.
func ghost(t *testing.T, b *Backend, path string) *workerpool.Job {
	t.Helper()
	rt := b.match(path)
	if rt == nil {
		t.Fatalf("ghost %s: no route", path)
	}
	wk := &work{started: make(chan struct{}), route: rt}
	j := &workerpool.Job{Data: wk, Service: rt.Service.Mean()}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.retire(now)
	rt.stats.Arrived++
	if b.pool.Arrive(now, j) == workerpool.Refused { // a start went to b.start
		rt.stats.Refused++
	}
	return j
}

// TestRetireWithoutHandlerWaking checks that the pool ends work at its model
// time even when the goroutine serving it never wakes: whatever next takes
// b.mu (Stats, Snapshot, an arrival) finishes it as of its end, and the
// queued request starts then, not when it was noticed.
func TestRetireWithoutHandlerWaking(t *testing.T) {
	cases := []struct {
		name    string
		timeout time.Duration
		notice  func(t *testing.T, b *Backend) *call // at 3s
		killed  bool
	}{
		{name: "Stats", notice: func(t *testing.T, b *Backend) *call { b.Stats(); return nil }},
		{name: "Snapshot", notice: func(t *testing.T, b *Backend) *call { b.Snapshot(); return nil }},
		{name: "arrival", notice: func(t *testing.T, b *Backend) *call { return serve(t, b, "/late") }},
		{name: "stats endpoint", notice: func(t *testing.T, b *Backend) *call { serve(t, b, StatsPath); return nil }},
		{name: "killed", timeout: 1500 * time.Millisecond, killed: true,
			notice: func(t *testing.T, b *Backend) *call { b.Stats(); return nil }},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := mustNew(t, Options{Pool: workerpool.Config{Workers: 1, Timeout: c.timeout}, Routes: []Route{
					{Name: "ghost", Path: "/ghost", Service: workerpool.Constant{D: 2 * time.Second}},
					{Name: "one", Path: "/", Service: workerpool.Constant{D: time.Second}},
				}})
				g := ghost(t, b, "/ghost")
				q := serve(t, b, "/q")
				time.Sleep(3 * time.Second)
				late := c.notice(t, b)
				synctest.Wait()

				end := 2 * time.Second
				if c.killed {
					end = tickAfter(b.pool, c.timeout)
				}
				wantState := workerpool.Done
				if c.killed {
					wantState = workerpool.Killed
				}
				b.mu.Lock()
				gs := g.State()
				b.mu.Unlock()
				if gs != wantState {
					t.Errorf("step %d.1: the ghost's job is %v at 3s, want %v", i, gs, wantState)
				}
				// The queued request starts at the ghost's end in model
				// time, but its handler hears of it only at 3s: it answers
				// then if its work ended by then.
				qEnd := end + time.Second
				if got, want := q.took(), max(qEnd, 3*time.Second); got != want || q.aborted {
					t.Errorf("step %d.2: queued request took %v aborted %v, want %v (started at the ghost's end, %v)", i, got, q.aborted, want, end)
				}
				if late != nil {
					if got, want := late.took(), max(qEnd, 3*time.Second)+time.Second-3*time.Second; got != want {
						t.Errorf("step %d.3: request arriving at 3s took %v, want %v", i, got, want)
					}
				}
				s := b.Snapshot()
				served, killed := uint64(1), uint64(1)
				if late != nil {
					served++
				}
				if c.killed {
					killed = 1
				} else {
					served, killed = served+1, 0
				}
				if s.Served != served || s.Killed != killed || s.Busy != 0 || s.Queued != 0 {
					t.Errorf("step %d.4: %+v, want served %d killed %d and nothing busy or queued", i, s.Stats, served, killed)
				}
				wantBusy := end + time.Second
				if late != nil {
					wantBusy += time.Second
				}
				if s.BusyTime != wantBusy {
					t.Errorf("step %d.5: busy time %v, want %v (the ghost's worker freed at %v)", i, s.BusyTime, wantBusy, end)
				}
				for _, r := range s.Routes {
					if r.Name == "ghost" && (r.Served+r.Killed != 1 || c.killed != (r.Killed == 1)) {
						t.Errorf("step %d.6: route %+v, want the ghost counted once, killed %v", i, r, c.killed)
					}
				}
			})
		})
	}
}

// TestRetireChainAtOneInstant checks that one retire hands a worker on
// through several ends that fall by the same moment: three one-second jobs
// on one worker, nothing else calling into the backend until 3s.
func TestRetireChainAtOneInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Options{Pool: workerpool.Config{Workers: 1}, Routes: []Route{{Path: "/", Service: workerpool.Constant{D: time.Second}}}})
		calls := []*call{serve(t, b, "/1"), serve(t, b, "/2"), serve(t, b, "/3")}
		for i, c := range calls {
			if got, want := c.took(), time.Duration(i+1)*time.Second; got != want || c.aborted {
				t.Errorf("step %d: request %d took %v aborted %v, want %v", i+1, i, got, c.aborted, want)
			}
		}
		s := b.Stats()
		checkStats(t, "step 4: at 3s", s, 0, 0, 3, 0, 0)
		if s.BusyTime != 3*time.Second || s.BusyMax != 1 || s.QueueMax != 2 {
			t.Errorf("step 4: busy time %v busy max %d queue max %d, want 3s 1 2", s.BusyTime, s.BusyMax, s.QueueMax)
		}
	})
}

func TestRetireKilledAtTimeout(t *testing.T) {
	for _, policy := range []workerpool.AbortPolicy{workerpool.Continue, workerpool.Cancel} {
		t.Run(policy.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := mustNew(t, Options{
					Pool: workerpool.Config{Workers: 1, Timeout: 3 * time.Second, OnClientAbort: policy},
					Routes: []Route{
						{Name: "slow", Path: "/slow", Service: workerpool.Constant{D: 10 * time.Second}},
						{Name: "fast", Path: "/", Service: workerpool.Constant{D: time.Second}},
					},
				})
				slow := serve(t, b, "/slow")
				fast := serve(t, b, "/")
				kill := tickAfter(b.pool, 3*time.Second) // the arbiter's tick

				time.Sleep(kill)
				checkStats(t, "step 1: at the kill", b.Stats(), 1, 0, 0, 1, 0)
				time.Sleep(time.Nanosecond)
				checkStats(t, "step 2: just after", b.Stats(), 1, 0, 0, 1, 0)
				if running, _ := runningJobs(b); len(running) != 1 || running[0].StartedAt() != kill {
					t.Errorf("step 2: running %v, want the fast job alone, started at %v", running, kill)
				}

				if got := slow.took(); got != kill || !slow.aborted {
					t.Errorf("step 3: slow request ended after %v aborted %v, want its connection dropped at %v", got, slow.aborted, kill)
				}
				if slow.rec.Body.Len() != 0 || len(slow.rec.Header()) != 0 {
					t.Errorf("step 3: killed request wrote headers %v body %q, want nothing", slow.rec.Header(), slow.rec.Body)
				}
				fast.servedIn(t, "step 4: queued request", kill+time.Second)
				s := b.Snapshot()
				checkStats(t, "step 5: at the end", s.Stats, 0, 0, 1, 1, 0)
				if s.BusyTime != kill+time.Second {
					t.Errorf("step 5: busy time %v, want %v (killed + 1s served)", s.BusyTime, kill+time.Second)
				}
				for _, r := range s.Routes {
					if r.Name == "slow" && (r.Killed != 1 || r.Served != 0) || r.Name == "fast" && (r.Served != 1 || r.Killed != 0) {
						t.Errorf("step 5: route %+v: want slow killed once, fast served once", r)
					}
				}
			})
		})
	}
}

// TestRetireKilledClientLeftAfter checks that a client leaving after its
// job was killed changes nothing: the pool already ended it.
func TestRetireKilledClientLeftAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Options{Pool: workerpool.Config{Workers: 1, Timeout: time.Second, OnClientAbort: workerpool.Cancel},
			Routes: []Route{{Path: "/", Service: workerpool.Constant{D: time.Minute}}}})
		a := serve(t, b, "/")
		kill := tickAfter(b.pool, time.Second)
		time.Sleep(kill)
		a.cancel()
		synctest.Wait()
		if got := a.took(); got != kill || !a.aborted {
			t.Errorf("step 1: took %v aborted %v, want dropped at %v", got, a.aborted, kill)
		}
		s := b.Stats()
		checkStats(t, "step 2", s, 0, 0, 0, 1, 0)
		if s.Abandoned != 0 || s.BusyTime != kill {
			t.Errorf("step 2: abandoned %d busy time %v, want 0 and %v", s.Abandoned, s.BusyTime, kill)
		}
	})
}

func TestRetireCancelledRunningJobNotFinishedTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Options{Pool: workerpool.Config{Workers: 1, OnClientAbort: workerpool.Cancel}, Routes: []Route{{Path: "/", Service: workerpool.Constant{D: 2 * time.Second}}}})
		a := serve(t, b, "/a")
		q1 := serve(t, b, "/q1")

		time.Sleep(500 * time.Millisecond)
		a.cancel() // frees the worker for q1 at 500ms
		synctest.Wait()
		if got := a.took(); got != 500*time.Millisecond || a.aborted || a.rec.Body.Len() != 0 {
			t.Errorf("step 1: cancelled request took %v aborted %v body %q, want a silent return at 500ms", got, a.aborted, a.rec.Body)
		}
		checkStats(t, "step 1: at 500ms", b.Stats(), 1, 0, 0, 0, 1)
		running, entries := runningJobs(b)
		if len(running) != 1 || running[0].StartedAt() != 500*time.Millisecond {
			t.Errorf("step 1: running %v, want q1 alone, started at 500ms", running)
		}
		if entries != 2 {
			t.Errorf("step 1: heap holds %d entries, want 2 (a's stays until its end, deleted lazily)", entries)
		}

		time.Sleep(500 * time.Millisecond)
		q2 := serve(t, b, "/q2") // at 1s: waits for q1, which ends at 2.5s
		checkStats(t, "step 2: at 1s", b.Stats(), 1, 1, 0, 0, 1)

		// a's stale entry comes due at 2s: retire must skip it, neither
		// serving a again nor freeing q1's worker for q2.
		time.Sleep(time.Second)
		checkStats(t, "step 3: at 2s", b.Stats(), 1, 1, 0, 0, 1)
		if _, entries := runningJobs(b); entries != 1 {
			t.Errorf("step 3: heap holds %d entries, want 1 (a's stale entry popped)", entries)
		}
		time.Sleep(time.Nanosecond)
		checkStats(t, "step 4: at 2s+1ns", b.Stats(), 1, 1, 0, 0, 1)

		q1.servedIn(t, "step 5: q1", 2500*time.Millisecond)
		q2.servedIn(t, "step 6: q2", 3500*time.Millisecond)
		s := b.Snapshot()
		checkStats(t, "step 7: at 4.5s", s.Stats, 0, 0, 2, 0, 1)
		if s.Arrived != 3 || s.Abandoned != 1 || s.BusyTime != 4500*time.Millisecond {
			t.Errorf("step 7: arrived %d abandoned %d busy time %v, want 3, 1, 4.5s", s.Arrived, s.Abandoned, s.BusyTime)
		}
		if r := s.Routes[0]; r.Arrived != 3 || r.Served != 2 || r.Cancelled != 1 {
			t.Errorf("step 7: route %+v, want 3 arrived, 2 served, 1 cancelled", r)
		}
	})
}

// TestRetireCancelAtEnd checks the order at one instant: work that ended
// by the time its client leaves is served, not cancelled.
func TestRetireCancelAtEnd(t *testing.T) {
	cases := []struct {
		leave     time.Duration
		cancelled bool
	}{
		{2*time.Second - time.Nanosecond, true},
		{2 * time.Second, false},
	}
	for i, c := range cases {
		synctest.Test(t, func(t *testing.T) {
			b := mustNew(t, Options{Pool: workerpool.Config{Workers: 1, OnClientAbort: workerpool.Cancel}, Routes: []Route{{Path: "/", Service: workerpool.Constant{D: 2 * time.Second}}}})
			a := serve(t, b, "/a")
			q := serve(t, b, "/q")
			time.Sleep(c.leave)
			a.cancel()
			a.took()
			s := b.Stats()
			wantCancelled, wantServed, wantCode := uint64(0), uint64(1), http.StatusOK
			if c.cancelled {
				wantCancelled, wantServed = 1, 0
			}
			if s.Cancelled != wantCancelled || s.Served != wantServed || a.rec.Code != wantCode || a.aborted {
				t.Errorf("step %d: client left at %v: cancelled %d served %d status %d aborted %v, want %d %d %d false",
					i, c.leave, s.Cancelled, s.Served, a.rec.Code, a.aborted, wantCancelled, wantServed, wantCode)
			}
			if c.cancelled == (a.rec.Body.Len() > 0) {
				t.Errorf("step %d: client left at %v: body %q", i, c.leave, a.rec.Body)
			}
			if got, want := q.took(), c.leave+2*time.Second; got != want {
				t.Errorf("step %d: queued request took %v, want %v", i, got, want)
			}
		})
	}
}

// replayed is what a pure Pool says of one request of a churn.
type replayed struct {
	job    *workerpool.Job
	route  int
	leftAt time.Duration // when its client left; -1 if it stayed
}

// churnReplay plays the arrivals and client departures a live churn made,
// at the same model times, on a pure Pool, finishing each running job at
// EndAt before any later event, as the Backend must.
type churnReplay struct {
	pool    *workerpool.Pool
	running []*workerpool.Job
	reqs    []*replayed
}

// finishBy finishes, in the order they end, every running job whose work
// ended by now.
func (r *churnReplay) finishBy(now time.Duration) {
	for {
		k := -1
		var first time.Duration
		for i, j := range r.running {
			if j.State() != workerpool.Running {
				continue
			}
			if end, _ := r.pool.End(j); end <= now && (k < 0 || end < first) {
				k, first = i, end
			}
		}
		if k < 0 {
			break
		}
		j := r.running[k]
		r.running = append(r.running[:k], r.running[k+1:]...)
		r.pool.Finish(first, j)
	}
}

func (r *churnReplay) arrive(now time.Duration, route int, service time.Duration) {
	r.finishBy(now)
	j := &workerpool.Job{Service: service}
	r.reqs = append(r.reqs, &replayed{job: j, route: route, leftAt: -1})
	r.pool.Arrive(now, j)
}

func (r *churnReplay) leave(now time.Duration, i int) {
	r.finishBy(now)
	r.reqs[i].leftAt = now
	r.pool.Abandon(now, r.reqs[i].job)
}

// TestRetireChurnMatchesPool runs 300 requests with random client
// departures through the live Backend and the same events through a pure
// Pool: every request must end when the pool says, and the counters must
// match the pool's exactly and add up.
func TestRetireChurnMatchesPool(t *testing.T) {
	routes := []Route{
		{Name: "page", Path: "/page", Service: workerpool.Constant{D: 400 * time.Millisecond}},
		{Name: "api", Path: "/api", Service: workerpool.Constant{D: time.Second}},
		{Name: "report", Path: "/report", Service: workerpool.Constant{D: 2 * time.Second}}, // over the timeout: killed
	}
	for _, policy := range []workerpool.AbortPolicy{workerpool.Continue, workerpool.Cancel} {
		t.Run(policy.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := workerpool.Config{Workers: 3, Backlog: 6, Overflow: workerpool.Reset, Timeout: 1500 * time.Millisecond, OnClientAbort: policy}
				b := mustNew(t, Options{Pool: cfg, Routes: routes, Seed: 11})
				model := &churnReplay{pool: workerpool.NewPool(cfg)}
				model.pool.OnStart = func(j *workerpool.Job) { model.running = append(model.running, j) }
				rng := rand.New(rand.NewPCG(11, uint64(policy)))
				t0 := time.Now()
				var calls []*call
				for range 300 {
					ri := rng.IntN(len(routes))
					model.arrive(time.Since(t0), ri, routes[ri].Service.Mean())
					calls = append(calls, serve(t, b, routes[ri].Path))
					if rng.IntN(4) == 0 {
						i := rng.IntN(len(calls))
						if model.reqs[i].leftAt < 0 {
							model.leave(time.Since(t0), i)
							calls[i].cancel()
							synctest.Wait()
						}
					}
					// Whole milliseconds, so that some events coincide.
					time.Sleep(time.Duration(rng.IntN(250)) * time.Millisecond)
				}
				for _, c := range calls {
					<-c.done
				}
				model.finishBy(time.Duration(1<<62 - 1))

				var last time.Duration
				var want [3]RouteStats
				for i, c := range calls {
					m := model.reqs[i]
					j := m.job
					want[m.route].Arrived++
					var took time.Duration
					aborted := false
					switch j.State() {
					case workerpool.Done:
						want[m.route].Served++
						took = j.StartedAt() + j.Service - j.ArrivedAt()
					case workerpool.Killed:
						want[m.route].Killed++
						end, _ := model.pool.End(j)
						took, aborted = end-j.ArrivedAt(), true
					case workerpool.Refused:
						want[m.route].Refused++
						aborted = true
					case workerpool.Cancelled:
						want[m.route].Cancelled++
						took = m.leftAt - j.ArrivedAt()
					default:
						t.Fatalf("request %d: the pool left it %v", i, j.State())
					}
					last = max(last, j.ArrivedAt()+took)
					if got := c.end.Sub(c.begin); got != took || c.aborted != aborted {
						t.Errorf("request %d (%s, %v): took %v aborted %v, want %v aborted %v", i, c.path, j.State(), got, c.aborted, took, aborted)
					}
					if j.State() == workerpool.Done && c.rec.Code != http.StatusOK {
						t.Errorf("request %d (%s): status %d, want 200", i, c.path, c.rec.Code)
					}
				}

				// Stats at the last end, which the pool accounts busy time to.
				time.Sleep(last - time.Since(t0))
				s := b.Snapshot()
				if w := model.pool.Stats(last); s.Stats != w {
					t.Errorf("backend stats\n%+v\nwant the pool's\n%+v", s.Stats, w)
				}
				if s.Busy != 0 || s.Queued != 0 {
					t.Errorf("after all ended: busy %d queued %d, want 0 and 0", s.Busy, s.Queued)
				}
				if sum := s.Served + s.Killed + s.Refused + s.Cancelled; sum != s.Arrived || s.Arrived != 300 {
					t.Errorf("served %d + killed %d + refused %d + cancelled %d = %d, want arrived %d = 300", s.Served, s.Killed, s.Refused, s.Cancelled, sum, s.Arrived)
				}
				if s.Killed == 0 || s.Refused == 0 || s.Abandoned == 0 || s.QueueMax != cfg.Backlog+1 {
					t.Errorf("stats %+v: want some killed, refused, abandoned and a full backlog, to exercise every path", s.Stats)
				}
				if policy == workerpool.Continue && s.Cancelled != 0 || policy == workerpool.Cancel && s.Cancelled == 0 {
					t.Errorf("policy %v: cancelled %d", policy, s.Cancelled)
				}
				for _, r := range s.Routes {
					i := -1
					for k := range routes {
						if routes[k].Name == r.Name {
							i = k
						}
					}
					w := want[i]
					w.Name, w.Path = r.Name, r.Path
					if r != w {
						t.Errorf("route %+v, want %+v", r, w)
					}
					if r.Served+r.Killed+r.Refused+r.Cancelled != r.Arrived {
						t.Errorf("route %s: counters do not add up: %+v", r.Name, r)
					}
				}
				// A cancelled job's entry stays until its work would have
				// ended, which may be after the last response.
				time.Sleep(10 * time.Second)
				b.Stats()
				if _, entries := runningJobs(b); entries != 0 {
					t.Errorf("end-time heap holds %d entries 10s after all ended, want 0", entries)
				}
			})
		})
	}
}
