package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"net/url"
	"time"

	"stampede/limit"
	"stampede/report"
	"stampede/scenarios"
	"stampede/workerpool"
	"stampede/workload"
)

// Epoch is the wall time model time 0 maps to when the simulator hands
// explicit times to limit_req (the pool takes model time as it is). Any
// fixed instant would do; a fixed one keeps limit_req's millisecond
// arithmetic the same on every machine.
var Epoch = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// DefaultSampleEvery is the model-time period of backend and key samples
// when Options.SampleEvery is zero.
const DefaultSampleEvery = time.Second

// DefaultBusiestKeys is how many limiter keys are sampled when
// Options.BusiestKeys is zero.
const DefaultBusiestKeys = 10

// checkEvery is how many events pass between two looks at the context.
const checkEvery = 4096

// Options tune Run. The zero value samples into the sink when it is a
// Sampler, once a model second, and uses the live driver's in-flight caps.
type Options struct {
	// Sampler receives samples of the backend and the busiest keys. Nil
	// means the sink when it implements Sampler, else no sampling.
	Sampler workload.Sampler
	// SampleEvery is the model-time period of samples. Zero means
	// DefaultSampleEvery.
	SampleEvery time.Duration
	// BusiestKeys is how many keys of the first limit_conn each key sample
	// holds. Zero means DefaultBusiestKeys; negative means none.
	BusiestKeys int
	// MaxInFlight caps open-model requests in flight over all tenants, as
	// the live driver does; an arrival over it is Dropped. See
	// workload.TotalCap: zero means workload.DefaultMaxInFlight; negative
	// means no cap.
	MaxInFlight int
	// Drain is how much model time after the scenario's Duration requests
	// still in flight may take to end. Those still in flight after it are
	// cut off and recorded as ClientTimeout, as the live driver does when
	// its drain runs out. Zero means workload.Drain, the rule both engines
	// follow; negative means no drain.
	Drain time.Duration
	// MaxEvents stops the run with an error wrapping ErrEventLimit after
	// this many events. Zero means no limit but the stall guard (ErrStalled).
	MaxEvents uint64
	// Version and CommandLine are recorded in the run's RunInfo.
	Version     string
	CommandLine string
}

// Stats are what a run counted. Times are model time.
type Stats struct {
	Events      uint64                       // events processed, stale ones included but those engine.trimWaits skips
	Requests    uint64                       // results handed to the sink
	Outcomes    [workload.NumOutcomes]uint64 // results by outcome
	CutOff      uint64                       // requests cut off when the drain ran out (counted as ClientTimeout too)
	Delayed     uint64                       // requests limit_req delayed
	Waited      uint64                       // requests that waited in the backend's backlog
	Started     uint64                       // jobs a worker took
	WaitTime    time.Duration                // total backlog wait of the jobs a worker took
	SYNDrops    uint64                       // connection attempts the full backlog dropped, retransmissions included
	Redropped   uint64                       // of SYNDrops, retransmissions handled without their request (see syns)
	KillGuessed uint64                       // results whose Work guessed the kill of a job not yet started (see engine.work)
	End         time.Duration                // model time of the last event
	Backend     workerpool.Stats             // the pool's counters at End
	Interrupted bool                         // ctx ended the run early
}

// never is a time no event reaches.
const never = time.Duration(math.MaxInt64)

// tenant is one tenant's state during a run. With many tenants their
// arrivals come in no order the cache can follow, so what an arrival reads
// and writes lies in as few cache lines as can hold it, first: the random
// stream, the route mix and the in-flight count in the first, the
// arrivals' next time in the second; nothing it needs lies behind a
// pointer of the tenant's own. The size is a multiple of a cache line, so
// that every tenant of the engine's slice starts one.
type tenant struct {
	stream   workload.Stream // the tenant's random stream (rng)
	mix      workload.Mix    // shared by the tenants of a group
	inFlight int32           // open model: requests without a result
	cap      int32           // open model: in-flight cap (scenarios bounds it to an int32)
	index    int32
	closed   bool
	arrivals workload.Arrivals
	arrived  int           // open model: arrivals so far, the next visitor's number
	timeout  time.Duration // client timeout; 0 none
	reqKeys  []string
	connKeys []string
	// keyBuf backs reqKeys and connKeys when they hold two keys in all,
	// as for a tenant with one limit_req and one limit_conn key: an
	// arrival then reads their headers with the tenant's other lines
	// rather than from allocations of their own, a miss each before the
	// keys' bytes (at 100,000 tenants with workers scaled, warm's reads of
	// them were 13% of the run).
	keyBuf [2]string
	// keys are the tenant's keys per visitor address and route, at
	// keys[visitor*keyRoutes+route], when it has an address pool (addrs) or
	// the proxy has locations (each route's path picks its location's
	// limits); empty otherwise, when reqKeys and connKeys serve every request.
	keys []keySet

	loop workload.Closed // closed model: its users' loop
	_    [tenantPad]byte
}

// tenantPad rounds tenant up to a multiple of a cache line.
const tenantPad = 16

// inlineKeys sets t's reqKeys and connKeys to req and conn, copied into
// keyBuf when they fit.
func (t *tenant) inlineKeys(req, conn []string) {
	t.reqKeys, t.connKeys = req, conn
	if len(req)+len(conn) > len(t.keyBuf) {
		return
	}
	n := copy(t.keyBuf[:], req)
	m := n + copy(t.keyBuf[n:], conn)
	if req != nil {
		t.reqKeys = t.keyBuf[:n:n]
	}
	if conn != nil {
		t.connKeys = t.keyBuf[n:m:m]
	}
}

// rng returns the tenant's random stream.
func (t *tenant) rng() *rand.Rand { return t.stream.Rand() }

// keySet is a tenant's limiter keys for one visitor address and one route's
// location.
type keySet struct {
	req  []string
	conn []string
}

// user is one closed-model user.
type user struct {
	t    *tenant
	done int // iterations completed
	k    int // the user's number within its tenant: its visitor number
}

// engine is one run.
type engine struct {
	sc        *scenarios.Scenario
	sink      workload.Sink
	sampler   workload.Sampler
	policy    *limit.Policy
	routePol  []*limit.Policy // per route, its location's limits; nil without locations
	keyRoutes int             // routes a tenant's keys are kept for: the backend's with locations, else 1
	pool      *workerpool.Pool
	dists     []workerpool.Dist
	tenants   []tenant
	users     []user
	hasConn   bool // there are keys to sample (Policy.KeysLimiter)
	readTO    time.Duration
	connTO    time.Duration     // the proxy's connect timeout; 0 none
	workerTO  time.Duration     // the backend's worker timeout; 0 none
	killable  bool              // the worker timeout kills (sync workers)
	starts    []*workerpool.Job // jobs the pool started during the current call
	wakeAt    time.Duration     // the pending evWake; never when none
	cancel    bool              // on_client_abort: cancel
	maxOpen   int               // 0: no cap
	open      int               // open-model requests without a result
	horizon   time.Duration
	every     time.Duration
	busiest   int
	keyMap    map[string]int
	busy      []limit.KeyCount // the busiest keys of the last sample
	arrivals  calendar         // the open-model tenants' next arrivals, one per tenant (evArrival)
	events    calendar         // every other event: requests', users', samples
	waits     waits            // timeouts of requests in the backlog, when in order (see schedule)
	syns      syns             // dropped connection attempts' next SYNs, when no timeout comes first
	eagerSYN  bool             // tests: every SYN through the calendar and connect, as before syns
	seq       uint64
	free      int32 // the first free request's id + 1; 0 none
	chunks    [][]request
	res       workload.Result
	stopping  bool
	stats     Stats
	guard     guard
	warmed    int64 // what warm read, kept so that its reads are not optimised away
}

// Run plays sc in virtual time and hands every request's result to sink
// (nil discards them), in the order the results happen; ties in model time
// go in the order their events were scheduled, so the same scenario and
// seed always give the same sequence. The *workload.Result passed to Add is
// reused after Add returns.
//
// Each request follows the live path: its tenant's schedule (open model) or
// user loop (closed model) sends it; limit_req decides at that model time
// (rejected, or held for its delay holding no limit_conn slot); limit_conn
// takes its slots; the backend pool takes the job (refused → 502, queued, or
// running until its service time or the worker timeout, killed → 502); the
// proxy's read timeout (from sending upstream, backlog time included) gives
// 504, the client timeout (from the intended send time) gives ClientTimeout,
// and both abandon the job, which under on_client_abort: continue keeps its
// worker busy until the work ends. Slots are released whenever a request
// ends. Load stops at sc.Duration; requests then in flight may end within
// opts.Drain.
//
// Run returns what the recorder needs beside the results: RunInfo with
// engine "sim". When ctx ends the run first it stops at once and returns
// the results handed to sink so far as an interrupted run (RunInfo.Model
// says how far it got, workload.Reached), with a nil error, as the live
// engine does.
func Run(ctx context.Context, sc *scenarios.Scenario, sink workload.Sink, opts Options) (report.RunInfo, error) {
	start := time.Now()
	st, err := Simulate(ctx, sc, sink, opts)
	if err != nil && !st.Interrupted {
		return report.RunInfo{}, err
	}
	info := report.RunInfo{
		Engine:      Engine,
		Start:       start,
		Wall:        time.Since(start),
		Interrupted: st.Interrupted,
		Backend:     st.Backend,
		Version:     opts.Version,
		CommandLine: opts.CommandLine,
	}
	if st.Interrupted {
		info.Model = workload.Reached(st.End, sc.Duration)
	}
	return info, nil
}

// Engine is the engine name results.json records for simulated runs.
const Engine = "sim"

// Simulate is Run returning what the run counted. When ctx ends the run
// first it stops at once and returns what it counted, with Interrupted
// set, and ctx's error.
func Simulate(ctx context.Context, sc *scenarios.Scenario, sink workload.Sink, opts Options) (Stats, error) {
	e, err := newEngine(sc, sink, opts)
	if err != nil {
		return Stats{}, err
	}
	err = e.run(ctx)
	return e.stats, err
}

func newEngine(sc *scenarios.Scenario, sink workload.Sink, opts Options) (*engine, error) {
	if sc == nil {
		return nil, errors.New("sim: no scenario")
	}
	if len(sc.Backend.Routes) == 0 {
		return nil, fmt.Errorf("sim: scenario %s: the backend has no routes", sc.Name)
	}
	policy, err := limit.NewPolicy(sc.Proxy.Limits)
	if err != nil {
		return nil, fmt.Errorf("sim: scenario %s: proxy limits: %w", sc.Name, err)
	}
	policy.Solo() // the run is one goroutine's
	e := &engine{
		sc:      sc,
		sink:    sink,
		policy:  policy,
		pool:    workerpool.NewPool(sc.PoolConfig()),
		hasConn: policy.KeysLimiter() != nil,
		readTO:  sc.Proxy.ReadTimeout,
		connTO:  sc.Proxy.ConnectTimeout,
		wakeAt:  never,
		every:   opts.SampleEvery,
		busiest: opts.BusiestKeys,
		seq:     1,
	}
	e.events.perBucket = eventsPerBucket
	e.workerTO = e.pool.Config().Timeout
	_, e.killable = e.pool.KillTick(0)
	e.cancel = e.pool.Config().OnClientAbort == workerpool.Cancel
	e.pool.OnStart = func(j *workerpool.Job) { e.starts = append(e.starts, j) }
	if e.sink == nil {
		e.sink = workload.SinkFunc(func(*workload.Result) {})
	}
	e.sampler = workload.SamplerOf(opts.Sampler, sink)
	if e.every <= 0 {
		e.every = DefaultSampleEvery
	}
	if e.busiest == 0 {
		e.busiest = DefaultBusiestKeys
	}
	if !e.hasConn {
		e.busiest = -1
	}
	e.maxOpen = workload.TotalCap(opts.MaxInFlight)
	for i, r := range sc.Backend.Routes {
		if r.Service == nil {
			return nil, fmt.Errorf("sim: scenario %s: route %s (%d) has no service time", sc.Name, r.Name, i)
		}
		e.dists = append(e.dists, workerpool.Prepare(r.Service))
	}

	tenants := sc.Expand()
	if len(tenants) > math.MaxInt32 {
		return nil, fmt.Errorf("sim: scenario %s: %d tenants is too many", sc.Name, len(tenants))
	}
	e.tenants = make([]tenant, len(tenants))
	mixes := make(map[*scenarios.Load]workload.Mix, len(sc.Tenants))
	keyRoutes := 1
	if len(policy.Locations) > 0 {
		keyRoutes = len(sc.Backend.Routes)
	}
	e.keyRoutes = keyRoutes
	for i := range tenants {
		st := &tenants[i]
		if st.Load == nil {
			return nil, fmt.Errorf("sim: scenario %s: tenant %s has no load", sc.Name, st.Name)
		}
		if len(st.Load.Routes) == 0 {
			return nil, fmt.Errorf("sim: scenario %s: tenant %s has no routes", sc.Name, st.Name)
		}
		for j, wr := range st.Load.Routes {
			if wr.Route < 0 || wr.Route >= len(e.dists) {
				return nil, fmt.Errorf("sim: scenario %s: tenant %s: routes[%d] is route %d; the backend has %d", sc.Name, st.Name, j, wr.Route, len(e.dists))
			}
		}
		t := &e.tenants[i]
		t.index = int32(st.Index)
		t.stream.Reset(sc.Seed, st.Index)
		mix, ok := mixes[st.Load]
		if !ok {
			mix = workload.NewMix(st.Load.Routes)
			mixes[st.Load] = mix
		}
		t.mix = mix
		t.timeout = max(st.Load.ClientTimeout, 0)
		t.closed = st.Load.Model == scenarios.Closed
		t.cap = int32(workload.TenantCap(st.Load))
		if t.closed {
			t.loop = workload.NewClosed(st.Load, sc.Duration)
		}
		t.inlineKeys(keysOf(policy, st, st.Addr, "/"))
		if visitors := max(st.PoolSize(), 1); visitors > 1 || keyRoutes > 1 { // scenarios.MaxPoolAddrs addresses at most
			t.keys = make([]keySet, visitors*keyRoutes)
			for v := range visitors {
				addr := st.Addr
				if visitors > 1 {
					addr = st.VisitorAddr(v)
				}
				for j := range keyRoutes {
					lp, target := policy, "/"
					if len(policy.Locations) > 0 {
						lp, target = policy.For(sc.Backend.Routes[j].Path), sc.Backend.Routes[j].Path
					}
					req, conn := keysOf(lp, st, addr, target)
					t.keys[v*keyRoutes+j] = keySet{req, conn}
				}
			}
		}
	}
	if len(policy.Locations) > 0 {
		for _, r := range sc.Backend.Routes {
			e.routePol = append(e.routePol, policy.For(r.Path))
		}
	}
	drain := workload.Drain(sc, tenants)
	switch {
	case opts.Drain > 0:
		drain = opts.Drain
	case opts.Drain < 0:
		drain = 0
	}
	e.horizon = max(sc.Duration, 0) + drain
	e.guard = newGuard(sc, len(e.tenants), opts.MaxEvents)
	if e.hasConn && e.busiest > 0 {
		e.keyMap = make(map[string]int, e.busiest)
	}
	e.plan(tenants)
	return e, nil
}

// plan schedules every tenant's first request: its users' first sends
// (closed model) or its first arrival. What it reads of the tenants' specs
// is read only here, so the tenants do not keep it.
func (e *engine) plan(specs []scenarios.Tenant) {
	var first []event
	for i := range e.tenants {
		t, load := &e.tenants[i], specs[i].Load
		if t.closed {
			first, ok := t.loop.First()
			if !ok {
				continue
			}
			for k := range load.Users {
				e.users = append(e.users, user{t: t, k: k})
				e.push(first, evSend, int32(len(e.users)-1))
			}
			continue
		}
		stop := workload.Stop(load, e.sc.Duration)
		t.arrivals.Reset(load, stop, t.rng())
		if load.Model == scenarios.Traced {
			t.arrivals.ResetTrace(specs[i].Trace, load.Start, stop)
		}
		if next, ok := t.arrivals.Next(); ok {
			first = append(first, event{at: next, seq: e.nextSeq(), ref: int32(i), kind: evArrival})
		}
	}
	e.arrivals.perBucket = arrivalsPerBucketFor(len(first))
	e.arrivals.reset(first)
}

// keysOf computes a tenant's limiter keys once, with the proxy's own key
// code, from the request its client would send for target (a path, with
// its query if any): Host the tenant's host, the client addr, no headers.
func keysOf(p *limit.Policy, t *scenarios.Tenant, addr, target string) (req, conn []string) {
	if addr == "" {
		addr = "127.0.0.1"
	}
	in := limit.Request{Host: t.Host}
	in.Addr, _ = netip.ParseAddr(addr)
	// The query as the server reads the request line's target.
	if u, err := url.ParseRequestURI(target); err == nil {
		in.Query = u.RawQuery
	}
	return p.Keys(&in)
}

// at converts model time to the explicit time the cores take.
func at(d time.Duration) time.Time { return Epoch.Add(d) }

// push schedules an event and returns its seq.
func (e *engine) push(t time.Duration, k kind, ref int32) uint64 {
	s := e.nextSeq()
	e.events.push(event{at: t, seq: s, ref: ref, kind: k})
	return s
}

// arrivalsPerBucket is the mean number of arrivals a bucket of the
// arrivals' calendar is sized to hold. Large buckets keep the writes of
// arrivals to few bucket tails and give warm a batch of tenants to read
// ahead of their arrivals; one bucket still fits the second-level cache.
// Measured at 250,000 tenants, when a bucket came up as a heap, 512 beat
// 32, 128 and 2048.
const arrivalsPerBucket = 512

// arrivalsPerBucketFor returns the arrivals a bucket holds with tenants
// open-model tenants arriving: arrivalsPerBucket, but for a small fleet an eighth of
// it, at least minArrivalsPerBucket. A bucket a tenant's next arrival falls
// in is as long as a good part of the gaps between them: at 250 tenants
// and 512 a bucket the window was one bucket, about two mean gaps long,
// and the next arrivals of half the tenants went into the bucket at hand,
// its heap, rather than the ring (32 took 2-5% off the run; at 250,000
// tenants it added a third, and at 2,500 neither won).
func arrivalsPerBucketFor(tenants int) int {
	return min(arrivalsPerBucket, max(tenants/8, minArrivalsPerBucket))
}

// minArrivalsPerBucket is arrivalsPerBucketFor's least.
const minArrivalsPerBucket = 32

// eventsPerBucket is arrivalsPerBucket for the other events. When a bucket
// came up as a heap, 64 cut the heap of the bucket at hand (709 events on
// average at 2,500 tenants with 512) and won at 2,500 tenants on a machine at load 4, but not at load
// 7-11, and its part-filled blocks took 300 bytes a tenant more there.
const eventsPerBucket = 512

// warm reads the state of the tenants whose arrivals are next, in one
// pass: with many tenants each is a cache miss, and misses issued side by
// side overlap where one tenant's arrival after another's would wait for
// each in turn.
func (e *engine) warm() {
	var x int64
	for i := range e.arrivals.run[e.arrivals.next:] {
		t := &e.tenants[e.arrivals.run[e.arrivals.next+i].ref]
		x += int64(t.inFlight) + int64(t.arrivals.Peek())
		// The limiter hashes and compares the keys' bytes, unless an
		// in-flight cap that is full now will drop the arrival: past a few
		// thousand tenants on 8 workers 93-99% are dropped, and reading
		// their keys was a quarter of the run at 250,000 tenants.
		if !workload.Admit(int64(t.inFlight), int64(t.cap), int64(e.open), int64(e.maxOpen)) {
			continue
		}
		for _, k := range t.connKeys {
			if len(k) > 0 {
				x += int64(k[0])
			}
		}
		for _, k := range t.reqKeys {
			if len(k) > 0 {
				x += int64(k[0])
			}
		}
	}
	e.warmed = x
}

// before reports whether ev comes before the events' and the waits' tops.
func (e *engine) before(ev *event) bool {
	return (e.events.len() == 0 || ev.before(e.events.top())) && (e.waits.len() == 0 || ev.before(e.waits.top())) && e.syns.before(ev)
}

// pending returns the number of events scheduled.
func (e *engine) pending() int {
	return e.arrivals.len() + e.events.len() + e.waits.len() + e.syns.len()
}

func (e *engine) nextSeq() uint64 {
	s := e.seq
	e.seq++
	return s
}

func (e *engine) run(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		e.stats.Interrupted = true
		return err
	}
	if e.sampler != nil && e.pending() > 0 {
		e.push(0, evSample, 0)
	}

loop:
	for n := 1; ; n++ {
		if n%checkEvery == 0 && ctx.Err() != nil {
			e.stats.Interrupted = true
			e.stats.Backend = e.pool.Stats(e.stats.End)
			return ctx.Err()
		}
		// The next event is the earliest of the two calendars' tops, the
		// waits' head and the syns'; all take their seqs from one counter,
		// so the order is the one a single queue would give.
		if e.arrivals.len() > 0 {
			if a := e.arrivals.top(); e.before(a) {
				if a.at > e.horizon {
					break
				}
				e.stats.Events++
				e.stats.End = a.at
				if !e.guard.ok(a.at) {
					return e.fail(e.guard.err())
				}
				// The arrival stays on top while it is handled (what it
				// schedules goes to the other queues) and is then
				// replaced by the tenant's next.
				t := &e.tenants[a.ref]
				e.arrive(t, a.at)
				next, ok := t.arrivals.Next()
				e.arrivals.replaceTop(next, e.seq, ok)
				if ok {
					e.seq++
				}
				if e.arrivals.loaded {
					e.arrivals.loaded = false
					e.warm()
				}
				continue
			}
		}
		if e.syns.len() > 0 && (e.events.len() == 0 || e.syns.precedes(e.events.top())) && (e.waits.len() == 0 || e.syns.precedes(e.waits.top())) {
			at := e.syns.top().at
			if at > e.horizon {
				break
			}
			e.stats.Events++
			e.stats.End = at
			if !e.guard.ok(at) {
				return e.fail(e.guard.err())
			}
			e.resend()
			continue
		}
		var ev event
		switch {
		case e.waits.len() > 0 && (e.events.len() == 0 || e.waits.top().before(e.events.top())):
			if e.waits.top().at > e.horizon {
				break loop
			}
			ev = e.waits.pop()
		case e.events.len() > 0 && e.events.top().at <= e.horizon:
			ev = e.events.pop()
		default:
			break loop
		}
		e.stats.Events++
		e.stats.End = ev.at
		if !e.guard.ok(ev.at) {
			return e.fail(e.guard.err())
		}
		switch ev.kind {
		case evSend:
			u := &e.users[ev.ref]
			e.send(u.t, ev.ref, ev.at)
		case evWake:
			e.wakeAt = never
			e.pool.Wake(ev.at)
			e.flushStarts()
			e.armWake()
		case evSample:
			e.sample(ev.at)
			if next := ev.at + e.every; e.pending() > 0 && next <= e.horizon {
				e.push(next, evSample, 0)
			}
		default:
			r := e.request(ev.ref)
			if r.ev != ev.seq {
				continue // stale
			}
			r.ev = 0
			switch ev.kind {
			case evDelayEnd:
				e.connStage(r, ev.at)
			case evEnd:
				e.end(r, ev.at)
			case evReadTimeout, evConnectTimeout:
				e.timeout(r, ev.at, workload.GatewayTimeout, statusGatewayTimeout)
			case evClientTimeout:
				e.timeout(r, ev.at, workload.ClientTimeout, 0)
			case evSYN:
				e.connect(r, ev.at)
			case evConnectFail:
				e.timeout(r, ev.at, workload.BackendError, statusBadGateway)
			}
		}
	}
	if e.pending() > 0 {
		e.cutOff(e.horizon)
	}
	e.stats.Backend = e.pool.Stats(e.stats.End)
	return nil
}
