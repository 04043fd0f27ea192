package fakebackend

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"stampede/clock"
	"stampede/internal/timeheap"
	"stampede/workerpool"
)

// Route is a path prefix and its service time (see workerpool.Route).
type Route = workerpool.Route

// Options configure New.
type Options struct {
	Pool workerpool.Config
	// Routes map paths to service times. Empty: every path takes no time
	// (but still goes through the pool). Otherwise a path no route matches
	// is answered 404 at once without taking a worker: a scenario only
	// sends to its routes, and counting a stray request against the pool
	// would distort what the run shows. Add a "/" route to catch every path.
	Routes []Route
	// TimeScale multiplies every duration (service times and the worker
	// timeout): 0.01 plays the model 100× faster. Zero means 1.
	TimeScale float64
	Seed      uint64 // seeds the service-time draws
	// KeepAlive keeps connections open between requests. False answers
	// every request with Connection: close, as a gunicorn sync worker does.
	// The pool works per request either way; keeping connections saves the
	// CPU of a connection per request when a proxy in the same process
	// drives many thousands of requests a second.
	KeepAlive bool
	// PreciseTimers ends work within about 0.1 ms of its time rather than
	// the runtime timer's millisecond (see package clock); a time-scaled
	// run wants it. False uses the runtime's timers alone, which
	// testing/synctest's fake clock needs.
	PreciseTimers bool
	// AccessLog, when not nil, gets a line in gunicorn's format for every
	// request a worker served.
	AccessLog *AccessLog
}

// WaitPath answers after the wall time its query's wait= gives (at most a
// second), without a worker: a live run times its own overhead with it.
const WaitPath = workerpool.ReservedPrefix + "wait"

// maxCalibrationWait bounds WaitPath's wait.
const maxCalibrationWait = time.Second

// Response headers a Backend sets.
const (
	// HeaderService carries the request's service time in model time, in
	// ParseDist's syntax ("2m", "1.5s").
	HeaderService = "X-Stampede-Service"
	// HeaderRoute carries the name of the route that served the request.
	HeaderRoute = "X-Stampede-Route"
)

// Backend is the live fake backend: an http.Handler over a Pool, where work
// is waiting on timers, never spinning. Each request's handler goroutine
// plays the sync worker that serves it (or the kernel's backlog slot that
// holds it), so a Backend never runs more goroutines than requests in
// flight, bounded by workers + backlog. It is safe for concurrent use.
//
// The pool runs in model time: a Backend's model clock advances 1/TimeScale
// model seconds per wall second, so its Stats and the pool's decisions read
// as in the scenario, and only the timers are scaled.
type Backend struct {
	routes    []route // sorted by descending path length
	keepAlive bool
	precise   bool
	access    *AccessLog

	// The model clock: model time 0 is New's.
	clock clock.ModelClock

	quit      chan struct{} // closed by Close
	closeOnce sync.Once
	freed     chan struct{} // a worker may have become free: see gate

	mu      sync.Mutex // guards pool, running, rng, claims, wake and every route's counters
	pool    *workerpool.Pool
	running timeheap.Heap[*workerpool.Job] // by the model time their work ends
	rng     *rand.Rand
	claims  int         // connections a gate accepted for a worker that has not had their request yet
	wake    *time.Timer // readies booting workers: see armWake
	wakeAt  time.Duration
	// kernelQueue, set by Serve on a gated TCP listener, reads the
	// kernel's accept queue, which then holds the backlog.
	kernelQueue func() (int, bool)
	kernelMax   int
}

type route struct {
	Route
	stats RouteStats
}

// New validates opts and returns a backend with every worker idle.
func New(opts Options) (*Backend, error) {
	c := opts.Pool
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("fake backend: %w", err)
	}
	scale := clock.Scale(opts.TimeScale)
	if err := scale.Validate(); err != nil {
		return nil, fmt.Errorf("fake backend: %w", err)
	}
	b := &Backend{
		quit:      make(chan struct{}),
		keepAlive: opts.KeepAlive,
		precise:   opts.PreciseTimers,
		freed:     make(chan struct{}, 1),
		access:    opts.AccessLog,
		pool:      workerpool.NewPool(c),
		running:   timeheap.Heap[*workerpool.Job]{At: func(j *workerpool.Job) time.Time { return time.Unix(0, int64(j.Data.(*work).end)) }},
		rng:       rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
	}
	seen := make(map[string]int, len(opts.Routes))
	for i, r := range opts.Routes {
		switch {
		case workerpool.CheckPath(r.Path) != nil:
			return nil, fmt.Errorf("fake backend: route %d: path %w", i, workerpool.CheckPath(r.Path))
		case r.Service == nil:
			return nil, fmt.Errorf("fake backend: route %d (%s): no service time", i, r.Path)
		}
		if j, dup := seen[r.Path]; dup {
			return nil, fmt.Errorf("fake backend: routes %d and %d both have path %q", j, i, r.Path)
		}
		seen[r.Path] = i
		if r.Name == "" {
			r.Name = r.Path
		}
		b.routes = append(b.routes, route{Route: r, stats: RouteStats{Name: r.Name, Path: r.Path}})
	}
	if len(b.routes) == 0 {
		b.routes = []route{{Route: Route{Name: "/", Path: "/", Service: workerpool.Constant{}}, stats: RouteStats{Name: "/", Path: "/"}}}
	}
	// Longest first; ties cannot happen (paths are distinct) but keep the
	// given order stable anyway.
	slices.SortStableFunc(b.routes, func(x, y route) int { return len(y.Path) - len(x.Path) })
	b.pool.OnStart = b.start
	b.clock = clock.NewModelClock(scale)
	return b, nil
}

// now returns the model time since New.
func (b *Backend) now() time.Duration { return b.clock.Now() }

// wallAt converts a model time to the wall time it falls at.
func (b *Backend) wallAt(t time.Duration) time.Time { return b.clock.WallAt(t) }

// match returns the route for path, or nil.
func (b *Backend) match(path string) *route {
	for i := range b.routes {
		if strings.HasPrefix(path, b.routes[i].Path) {
			return &b.routes[i]
		}
	}
	return nil
}

// ServeHTTP serves one request as a sync worker would. The request waits in
// the backlog for a worker, then the worker works for the route's service
// time (times TimeScale) and answers 200 with Connection: close. A request
// that finds the backlog full, or whose worker the timeout kills, has its
// connection dropped without a response (it panics with
// http.ErrAbortHandler, which http.Server handles quietly), so the proxy in
// front answers 502.
//
// When the client goes away, the pool's OnClientAbort decides: under
// Continue the handler waits and works on as if nothing happened, holding
// its worker (or its place in the backlog), then writes to the dead
// connection; under Cancel it leaves the pool and returns at once.
//
// StatsPath is answered at once, without a worker. After Close every
// request's connection is dropped.
func (b *Backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cc, _ := r.Context().Value(claimKey{}).(*claimedConn)
	switch r.URL.Path {
	case StatsPath:
		b.unclaim(cc)
		b.serveStats(w, r)
		return
	case WaitPath:
		b.unclaim(cc)
		d, err := time.ParseDuration(r.URL.Query().Get("wait"))
		if err != nil || d < 0 || d > maxCalibrationWait {
			http.Error(w, "want wait=DURATION of at most 1s", http.StatusBadRequest)
			return
		}
		clock.Wait(r.Context(), time.Now().Add(d), b.precise)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	select {
	case <-b.quit:
		panic(http.ErrAbortHandler)
	default:
	}
	rt := b.match(r.URL.Path)
	if rt == nil {
		b.unclaim(cc)
		http.Error(w, "no route for "+r.URL.Path, http.StatusNotFound)
		return
	}

	wk := &work{started: make(chan struct{}), route: rt}
	j := &workerpool.Job{Data: wk}
	b.mu.Lock()
	now := b.now()
	b.retire(now)
	if cc != nil {
		b.useClaim(cc) // the worker the gate accepted it for takes it
	}
	j.Service = rt.Service.Sample(b.rng)
	rt.stats.Arrived++
	st := b.pool.Arrive(now, j)
	b.mu.Unlock()

	// The client's going away is asked for only where the handler waits:
	// asking makes the lean server (see Serve) watch the connection,
	// which a request answered at once does not need.
	var gone <-chan struct{}
	watching := false
	watch := func() <-chan struct{} {
		if !watching {
			gone, watching = r.Context().Done(), true
		}
		return gone
	}
	started := wk.started
	var (
		timer    *time.Timer
		fired    <-chan time.Time
		deadline time.Time
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	if st == workerpool.Refused {
		b.refused(rt)
	}
	// A connection over a full backlog that the kernel did not see (a
	// handler behind no gate) is held here on the client's SYN schedule,
	// in model time, until it fits.
	for st == workerpool.Dropped {
		at, again := j.NextSYN()
		timer = time.NewTimer(time.Until(b.wallAt(at)))
		select {
		case <-timer.C:
		case <-watch():
			b.abandon(j, rt)
			return
		case <-b.quit:
			panic(http.ErrAbortHandler)
		}
		if !again { // connect fails with ETIMEDOUT
			b.abandon(j, rt)
			panic(http.ErrAbortHandler)
		}
		b.mu.Lock()
		now := max(b.now(), at)
		b.retire(now)
		st = b.pool.Arrive(now, j)
		b.mu.Unlock()
		if st == workerpool.Refused {
			b.refused(rt)
		}
	}
wait:
	for {
		if started != nil {
			select {
			case <-started:
				started = nil
				// wk.end was set before started was closed.
				deadline = b.wallAt(wk.end)
				d := time.Until(deadline)
				if d <= 0 {
					break wait
				}
				// The runtime's timer wakes up to a millisecond late,
				// which a time-scaled run multiplies: with precise timers
				// it covers all but the last stretch, which clock.Wait
				// times.
				if b.precise {
					if d <= clock.Coarse {
						clock.Wait(nil, deadline, true) //nolint:staticcheck // no context: the work goes on
						break wait
					}
					d -= clock.Coarse
				}
				timer = time.NewTimer(d)
				fired = timer.C
			default:
			}
		}
		select {
		case <-started:
			// Taken at the top of the loop.
		case <-fired:
			clock.Wait(nil, deadline, b.precise) //nolint:staticcheck // no context: the work goes on
			break wait
		case <-watch():
			gone = nil
			if b.abandon(j, rt) {
				return
			}
		case <-b.quit:
			panic(http.ErrAbortHandler)
		}
	}

	b.mu.Lock()
	b.retire(max(b.now(), wk.end))
	st = j.State()
	b.mu.Unlock()
	if st == workerpool.Killed {
		// gunicorn's arbiter SIGKILLs the worker: the connection drops.
		panic(http.ErrAbortHandler)
	}

	h := w.Header()
	if !b.keepAlive {
		h.Set("Connection", "close") // a sync worker closes every connection
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set(HeaderService, workerpool.FormatDuration(j.Service))
	h.Set(HeaderRoute, rt.Name)
	w.WriteHeader(http.StatusOK)
	n, _ := fmt.Fprintf(w, "%s: served in %s\n", rt.Name, workerpool.FormatDuration(j.Service))
	b.access.logServed(r, b.wallAt(wk.end-j.Service), http.StatusOK, n)
}

// refused counts a connection the backlog refused and drops it: the proxy
// in front answers 502.
func (b *Backend) refused(rt *route) {
	b.mu.Lock()
	rt.stats.Refused++
	b.mu.Unlock()
	panic(http.ErrAbortHandler)
}

// abandon tells the pool that j's client left and reports whether the
// handler should return now (the policy is Cancel).
func (b *Backend) abandon(j *workerpool.Job, rt *route) (leave bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.retire(now)
	b.pool.Abandon(now, j)
	b.freedWorker()
	if j.State() != workerpool.Cancelled {
		return false
	}
	rt.stats.Cancelled++
	return true
}

// work is a request's state in the live backend: its Job's Data.
type work struct {
	started chan struct{} // closed once a worker has the job and end is set
	end     time.Duration // model time the work leaves its worker
	route   *route
}

// start records that j has a worker: it joins the running jobs, ordered by
// when they end, and its handler wakes. It is the pool's OnStart; b.mu is
// held.
func (b *Backend) start(j *workerpool.Job) {
	wk := j.Data.(*work)
	wk.end, _ = b.pool.End(j)
	b.running.Push(j)
	close(wk.started)
}

// retire ends, at the model times they end, every running job whose work
// ended by now; the pool hands each freed worker to the head of the
// backlog. The pool thus frees a worker when the model says, not when the
// goroutine serving the request happens to wake, which on a busy machine is
// later. b.mu is held.
func (b *Backend) retire(now time.Duration) {
	n := 0
	for b.running.Len() > 0 {
		j := b.running.Min()
		wk := j.Data.(*work)
		if wk.end > now {
			break
		}
		b.running.Pop()
		if j.State() != workerpool.Running {
			continue // cancelled: its worker was freed already
		}
		b.pool.Finish(wk.end, j)
		switch j.State() {
		case workerpool.Done:
			wk.route.stats.Served++
		case workerpool.Killed:
			wk.route.stats.Killed++
		}
		n++
	}
	b.pool.Wake(now)
	if n > 0 {
		b.freedWorker()
	}
	b.armWake()
}

// armWake makes sure retire runs when the next booting worker is ready,
// since no request's handler may wake then. b.mu is held.
func (b *Backend) armWake() {
	at, ok := b.pool.NextWake()
	if !ok || b.wake != nil && b.wakeAt <= at {
		return
	}
	if b.wake != nil {
		b.wake.Stop()
	}
	b.wakeAt = at
	b.wake = time.AfterFunc(time.Until(b.wallAt(at)), func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.wake = nil
		select {
		case <-b.quit:
			return
		default:
		}
		b.retire(max(b.now(), at))
		b.freedWorker()
	})
}

// freedWorker wakes a gate waiting for a free worker. b.mu is held.
func (b *Backend) freedWorker() {
	select {
	case b.freed <- struct{}{}:
	default:
	}
}

// unclaim gives back the worker the gate accepted cc for, when a request
// that needs none comes on it.
func (b *Backend) unclaim(cc *claimedConn) {
	if cc == nil {
		return
	}
	b.mu.Lock()
	if !cc.used {
		b.useClaim(cc)
		b.freedWorker()
	}
	b.mu.Unlock()
}

// Close drops the connection of every request in flight or waiting, and of
// every later one, so that handler goroutines end at once rather than when
// their work would. The pool's counters stay as they were. Close is
// idempotent and safe to call concurrently with ServeHTTP.
func (b *Backend) Close() {
	b.closeOnce.Do(func() {
		close(b.quit)
		b.mu.Lock()
		if b.wake != nil {
			b.wake.Stop()
		}
		b.mu.Unlock()
	})
}
