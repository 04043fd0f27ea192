package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"stampede/clock"
	"stampede/internal/h1"
	"stampede/scenarios"
	"stampede/workload"
)

// Defaults of DriverOptions.
const (
	// resultBuffer is how many results may wait for the sink goroutine before
	// producers block on it.
	resultBuffer = 8192
)

// sendQuantum is, in model time and at most in wall time, the shortest
// the open-model scheduler sleeps between sends with PreciseTimers: sends
// due closer together go out together, up to sendQuantum late, which
// spares a wake-up of the high-resolution timer for each of them at tens
// of thousands a second. Half of StallMin, so that the wait it adds is
// not taken for a stall.
const sendQuantum = StallMin / 2

// errDrainExpired is the cause of the run context's cancellation when the
// drain period after the last send ran out.
var errDrainExpired = errors.New("loadgen: drain period over")

// DriverOptions configure NewDriver.
type DriverOptions struct {
	// Target is the base URL requests go to; a route's path is appended to
	// its path. Required, http only.
	Target *url.URL
	// PreciseTimers sends within about 0.1 ms of the intended time rather
	// than the runtime timer's millisecond (see package clock). False uses
	// the runtime's timers alone, which testing/synctest's fake clock needs.
	PreciseTimers bool
	// Tare is the wall time the path takes for a request that does no work
	// (client, proxy and backend on loopback), subtracted from the measured
	// latency of every answered request, never below zero: in the model the
	// network takes no time. Zero subtracts nothing. Driver.SetTare changes
	// it while the driver runs.
	Tare time.Duration
	// Tenants are the scenario's expanded tenants. Result.Tenant is
	// Tenants[i].Index.
	Tenants []scenarios.Tenant
	// Routes are the scenario's backend routes; a tenant's weighted routes
	// index them, and Result.Route is that index.
	Routes []scenarios.Route
	// Horizon is the model time during which load is generated (the
	// scenario's Duration). A tenant's Stop of zero, or past Horizon, means
	// Horizon.
	Horizon time.Duration
	// TimeScale plays model time this many times real time: 0.01 runs a
	// model second in 10 ms of wall time. Zero means 1.
	TimeScale float64
	// Seed seeds every tenant's random stream (TenantRand).
	Seed uint64
	// RejectStatuses are the statuses the limiter answers with; see
	// Classify. Nil means 503 only.
	RejectStatuses []int
	// MarkedRejections says the target marks every answer of its limits
	// with limiterproxy.LimitHeader, as the built-in proxy does: then an
	// answer is Rejected when it carries the header and never otherwise, so
	// that a limit answering 502 or 504 is told apart from the upstream's
	// own. False classifies by status alone (Classify). Either way an
	// answer that carries the header is Rejected.
	MarkedRejections bool
	// MaxInFlight caps open-model requests in flight over all tenants; an
	// arrival over it is Dropped. See workload.TotalCap: zero means
	// workload.DefaultMaxInFlight, negative no cap. Closed-model users are
	// not counted: their number already bounds them.
	MaxInFlight int
	// Drain bounds, in wall time, how long requests still in flight at the
	// horizon may take. When it runs out they are abandoned and recorded as
	// ClientTimeout (the client, this driver, gave up). Zero means wait for
	// every one; client timeouts and the proxy's read timeout then bound the
	// wait.
	Drain time.Duration
	// Sample, when not nil, is called about every SampleEvery of wall time
	// with the model time elapsed, from the goroutine that calls Sink.Add, so
	// it may record into the same non-concurrent recorder.
	Sample func(at time.Duration)
	// SampleEvery is the wall-time period of Sample. Zero means one model
	// second, but no more often than every 5 ms.
	SampleEvery time.Duration
	// Counters, when not nil, receive the driver's live counts, so a caller
	// that set them up before Run can poll them while it runs. Nil means the
	// driver keeps its own; Driver.Progress reads them either way.
	Counters *Counters
	// Dial, when not nil, makes the driver's connections instead of TCP
	// (an in-memory transport, see internal/memnet), from each tenant's
	// address, which the server then sees as the connection's remote
	// address whatever the target. Nil dials Target over TCP, from the
	// tenant's address when the target is on IPv4 loopback.
	Dial func(ctx context.Context, from netip.Addr) (net.Conn, error)
}

// tenant is one tenant's sending state.
type tenant struct {
	index    int32
	host     string
	load     *scenarios.Load
	rt       *h1.Client
	timeout  time.Duration // wall
	cap      int64         // open model: in-flight cap (workload.TenantCap)
	inFlight atomic.Int64  // open model: incremented by the scheduler only
	mix      workload.Mix
	routeOf  []int // weighted-route position → backend route index
	stop     time.Duration
	loop     workload.Closed // closed model: its users' loop
	picks    *rand.Rand      // open model: the route picks, a stream apart from the arrivals'
	arrivals *workload.Arrivals
	trace    []scenarios.TraceArrival // model trace: the tenant's arrivals

	pool    []*h1.Client // with an address pool (addrs): one per address, by visitor (scenarios.Tenant.VisitorAddr)
	from    netip.Addr   // the source address of rt's connections; zero: the system's choice
	froms   []netip.Addr // those of pool's
	gets    [][]byte     // closed model on event loops: the request of each route (h1.AppendGet)
	lines   *lines       // open model: the connections from the tenant's address
	lpool   []*lines     // open model: those from each address of the pool, as pool
	arrived int          // open model: arrivals sent so far, the next visitor's number; the scheduler's alone
}

// Driver sends a scenario's load over HTTP: open-model tenants at their
// intended times from one scheduler goroutine, closed-model users as one
// goroutine each, or, on Linux, those that canLoop allows (no think time,
// TCP to an IP address, precise timers) shared among event loops that
// own their connections. Latency counts from the intended send time and is
// converted to model time. A Driver runs once; Progress is safe to call from
// any goroutine at any time.
type Driver struct {
	opts       DriverOptions
	scale      clock.Scale
	reject     []int
	maxFlight  int64
	uris       []string // urls' request targets
	tenants    []*tenant
	transports []*h1.Client
	lines      []*lines // every open-model tenant's, one per address
	counters   *Counters
	openFlight atomic.Int64
	ran        atomic.Bool
	connected  atomic.Bool // Connect was called
	pacer      clock.Pacer
	quantum    time.Duration // wall sendQuantum
	late       *latenessRecorder
	stalls     stallRecorder
	tare       atomic.Int64 // nanoseconds
	// loopTo is the target's address when its host is an IP address,
	// which event loops connect to (canLoop); zero otherwise.
	loopTo netip.AddrPort
	// looped is how many users Run played on event loops.
	looped int
}

// NewDriver validates opts and prepares one HTTP transport per distinct
// client address. It sends nothing.
func NewDriver(opts DriverOptions) (*Driver, error) {
	if opts.Target == nil || opts.Target.Scheme != "http" || opts.Target.Host == "" {
		return nil, fmt.Errorf("loadgen: target %v: want an http:// URL with a host", opts.Target)
	}
	d := &Driver{opts: opts, scale: clock.Scale(opts.TimeScale), reject: opts.RejectStatuses, counters: opts.Counters, late: newLatenessRecorder()}
	if opts.Tare < 0 {
		return nil, fmt.Errorf("loadgen: tare %v: want zero or more", opts.Tare)
	}
	d.tare.Store(int64(opts.Tare))
	if err := d.scale.Validate(); err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	d.quantum = min(sendQuantum, d.scale.Wall(sendQuantum))
	if d.reject == nil {
		d.reject = []int{http.StatusServiceUnavailable}
	}
	d.maxFlight = int64(workload.TotalCap(opts.MaxInFlight))
	if d.counters == nil {
		d.counters = new(Counters)
	}
	if len(opts.Routes) > math.MaxInt16 {
		return nil, fmt.Errorf("loadgen: %d routes: at most %d", len(opts.Routes), math.MaxInt16)
	}
	base := strings.TrimSuffix(opts.Target.Path, "/")
	for _, r := range opts.Routes {
		u := *opts.Target
		u.Path = base + r.Path
		u.RawPath = ""
		d.uris = append(d.uris, u.RequestURI())
	}
	loopback := opts.Dial != nil || isLoopbackV4(opts.Target.Hostname())
	if ip, err := netip.ParseAddr(opts.Target.Hostname()); err == nil && ip.Zone() == "" {
		port := uint16(80)
		if p := opts.Target.Port(); p != "" {
			n, err := strconv.ParseUint(p, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("loadgen: target %v: port %q is not a port number", opts.Target, p)
			}
			port = uint16(n)
		}
		d.loopTo = netip.AddrPortFrom(ip.Unmap(), port)
	}
	byAddr := map[string]*h1.Client{}
	transportFor := func(addr string) (*h1.Client, error) {
		if tr, ok := byAddr[addr]; ok {
			return tr, nil
		}
		tr, err := d.transport(addr)
		if err != nil {
			return nil, err
		}
		byAddr[addr] = tr
		d.transports = append(d.transports, tr)
		return tr, nil
	}
	linesByAddr := map[string]*lines{}
	linesFor := func(addr string) *lines {
		if l, ok := linesByAddr[addr]; ok {
			return l
		}
		l := newLines(d, byAddr[addr].Dial)
		linesByAddr[addr] = l
		d.lines = append(d.lines, l)
		return l
	}
	rates := map[*lines]float64{} // each one's open-model arrivals a second of wall time, at their peak
	for i := range opts.Tenants {
		sc := &opts.Tenants[i]
		if sc.Load == nil {
			return nil, fmt.Errorf("loadgen: tenant %s: no load", sc.Name)
		}
		if len(sc.Load.Routes) == 0 {
			return nil, fmt.Errorf("loadgen: tenant %s: no routes", sc.Name)
		}
		t := &tenant{index: int32(sc.Index), host: sc.Host, load: sc.Load, mix: workload.NewMix(sc.Load.Routes)}
		t.trace = sc.Trace
		for j, wr := range sc.Load.Routes {
			if wr.Route < 0 || wr.Route >= len(opts.Routes) {
				return nil, fmt.Errorf("loadgen: tenant %s: routes[%d] is route %d; the backend has %d", sc.Name, j, wr.Route, len(opts.Routes))
			}
		}
		t.timeout = d.scale.Wall(sc.Load.ClientTimeout)
		t.cap = int64(workload.TenantCap(sc.Load))
		t.stop = workload.Stop(sc.Load, opts.Horizon)
		t.loop = workload.NewClosed(sc.Load, opts.Horizon)
		addr := ""
		if loopback {
			addr = sc.Addr
		}
		var err error
		if t.rt, err = transportFor(addr); err != nil {
			return nil, fmt.Errorf("loadgen: tenant %s: %w", sc.Name, err)
		}
		t.from = sourceAddr(addr)
		open := sc.Load.Model != scenarios.Closed
		if open {
			t.lines = linesFor(addr)
		}
		if n := sc.PoolSize(); loopback && n > 1 {
			t.pool = make([]*h1.Client, n)
			for v := range t.pool {
				if t.pool[v], err = transportFor(sc.VisitorAddr(v)); err != nil {
					return nil, fmt.Errorf("loadgen: tenant %s: %w", sc.Name, err)
				}
				t.froms = append(t.froms, sourceAddr(sc.VisitorAddr(v)))
				if open {
					t.lpool = append(t.lpool, linesFor(sc.VisitorAddr(v)))
				}
			}
		}
		if !open {
			for _, uri := range d.uris {
				t.gets = append(t.gets, h1.AppendGet(nil, uri, t.host))
			}
		}
		if open {
			r := peakRate(sc) / d.scale.Factor()
			if len(t.lpool) == 0 {
				rates[t.lines] += r
			} else {
				for _, l := range t.lpool {
					rates[l] += r / float64(len(t.lpool))
				}
			}
		}
		d.tenants = append(d.tenants, t)
	}
	// Each address's lines keep lineWindow's sends beyond the tare, all
	// together no more than maxKeep or the in-flight cap, shared in
	// proportion.
	window := (lineWindow + opts.Tare).Seconds()
	total := 0.0
	for _, l := range d.lines {
		total += rates[l] * window
	}
	share := 1.0
	if most := float64(min(maxKeep, d.flightBound())); total > most {
		share = most / total
	}
	for _, l := range d.lines {
		l.keep = int(rates[l] * window * share)
	}
	return d, nil
}

// peakRate returns the most arrivals a second of model time that tenant's
// open load asks for: its rate, or its busiest stage's, or a trace's
// average.
func peakRate(tenant *scenarios.Tenant) float64 {
	l := tenant.Load
	if l.Model == scenarios.Traced {
		if n := len(tenant.Trace); n > 1 {
			if span := tenant.Trace[n-1].At - tenant.Trace[0].At; span > 0 {
				return float64(n) / span.Seconds()
			}
		}
		return 0
	}
	r := l.Rate
	for _, st := range l.Stages {
		r = max(r, st.Rate)
	}
	return r
}

// Connect opens, before the run's clock starts, the open model's
// connections its sends need at once at the tenants' peak rates: those
// of lineWindow of sends beyond the tare, from each client address, up to
// maxKeep in all. So the first sends of the run, and a burst after a stall,
// find connections open rather than dial them while the run is timed;
// while it runs, one that the server closes is dialled again in the
// background. Without Connect the run dials every connection as its
// sends need it. A dial that fails ends it, and leaves the run to dial.
// A call after the first, or after Run began, does nothing. Run must
// follow: its end closes the connections.
func (d *Driver) Connect(ctx context.Context) {
	if d.ran.Load() || d.connected.Swap(true) {
		return
	}
	for _, l := range d.lines {
		if ctx.Err() != nil {
			return
		}
		l.connect(ctx)
	}
}

// flightBound returns the most open-model requests that can be in flight
// at once: the driver's cap, or, without one, no bound.
func (d *Driver) flightBound() int {
	if d.maxFlight <= 0 {
		return math.MaxInt
	}
	return int(d.maxFlight)
}

// visitor returns the round tripper of visitor v: the one from its address
// in the tenant's pool, or the tenant's own without a pool.
func (t *tenant) visitor(v int) *h1.Client {
	if len(t.pool) == 0 {
		return t.rt
	}
	return t.pool[v%len(t.pool)]
}

// visitorFrom returns the source address of visitor v's connections, as
// visitor does.
func (t *tenant) visitorFrom(v int) netip.Addr {
	if len(t.froms) == 0 {
		return t.from
	}
	return t.froms[v%len(t.froms)]
}

// visitorLines returns the open-model connections of visitor v, as
// visitor does.
func (t *tenant) visitorLines(v int) *lines {
	if len(t.lpool) == 0 {
		return t.lines
	}
	return t.lpool[v%len(t.lpool)]
}

// Progress returns the live counts.
func (d *Driver) Progress() Progress { return d.counters.Snapshot() }

// SetTare sets the tare subtracted from the latency of requests answered
// from now on (see DriverOptions.Tare), so that a caller measuring the path
// while the run goes on can follow the machine's state. Negative counts as
// zero. It is safe to call at any time.
func (d *Driver) SetTare(tare time.Duration) { d.tare.Store(int64(max(tare, 0))) }

// SendLateness returns how late the driver has sent its requests so far.
// It is safe to call at any time.
func (d *Driver) SendLateness() workload.Lateness { return d.late.summary() }

// Stalls returns the generator's stalls so far (see Stalls). It is safe to
// call at any time.
func (d *Driver) Stalls() Stalls { return d.stalls.summary() }

// wait waits until the model time at from start, or until ctx is done, and
// reports whether the moment came (ok). With PreciseTimers it may return a
// little early (see clock.Pacer): do measures from the earlier of the
// intended time and the send. Paced reports whether the pacer slept, so
// that do should tell it how late the send was.
func (d *Driver) wait(ctx context.Context, start time.Time, at time.Duration) (paced, ok bool) {
	deadline := start.Add(d.scale.Wall(at))
	if !d.opts.PreciseTimers {
		return false, clock.Wait(ctx, deadline, false)
	}
	return d.pacer.Wait(ctx, deadline)
}

// Run sends the load, model time 0 being start, and hands every result to
// sink from one goroutine, which it owns. It returns when every request it
// sent has ended and every result has reached the sink: after the horizon,
// once requests still in flight are answered, time out, or are cut off when
// Drain runs out.
//
// When ctx is cancelled Run stops sending at once, abandons the requests in
// flight (their connections close) and returns promptly with ctx's error.
// Abandoned requests are not recorded, because their end says nothing about
// the server; Progress counts them as Abandoned. Results recorded before
// the cancellation all reach the sink.
//
// Run may be called once.
func (d *Driver) Run(ctx context.Context, start time.Time, sink workload.Sink) error {
	if d.ran.Swap(true) {
		return errors.New("loadgen: Driver.Run called twice")
	}
	c := d.counters
	c.scale.Store(math.Float64bits(float64(d.scale)))
	c.start.Store(start.UnixNano())
	defer func() {
		for _, tr := range d.transports {
			tr.CloseIdleConnections()
		}
	}()

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	results := make(chan workload.Result, resultBuffer)
	consumed := make(chan struct{})
	go d.consume(start, results, sink, consumed)

	var producers sync.WaitGroup
	var open []*tenant
	var looped []*loopUser
	for _, t := range d.tenants {
		if t.load.Model == scenarios.Closed {
			for u := range t.load.Users {
				rng := rand.New(rand.NewPCG(d.opts.Seed, stream(t.index, u+1)))
				if haveLoops && d.canLoop(t) {
					looped = append(looped, &loopUser{t: t, rng: rng, from: t.visitorFrom(u), rt: t.visitor(u), gets: t.gets})
					continue
				}
				producers.Go(func() { d.user(runCtx, start, t, t.visitor(u), rng, results) })
			}
			continue
		}
		// The arrivals draw from the tenant's own stream alone, so they are
		// exactly NewArrivals' whatever the routes; picks come from another.
		t.arrivals = workload.NewArrivals(t.load, d.opts.Horizon, workload.TenantRand(d.opts.Seed, int(t.index)))
		if t.load.Model == scenarios.Traced {
			t.arrivals.ResetTrace(t.trace, t.load.Start, t.stop)
		}
		t.picks = rand.New(rand.NewPCG(d.opts.Seed, stream(t.index, 0)))
		open = append(open, t)
	}
	if len(open) > 0 {
		producers.Go(func() { d.schedule(runCtx, start, open, results) })
	}
	d.looped = len(looped)
	if len(looped) > 0 {
		producers.Go(func() { d.runLoops(runCtx, start, looped, results) })
	}

	finished := make(chan struct{})
	go func() {
		producers.Wait()
		close(finished)
	}()
	if d.opts.Drain > 0 {
		deadline := time.NewTimer(time.Until(start.Add(d.scale.Wall(d.opts.Horizon) + d.opts.Drain)))
		select {
		case <-finished:
		case <-deadline.C:
			cancel(errDrainExpired)
		}
		deadline.Stop()
	}
	<-finished
	close(results)
	<-consumed
	return ctx.Err()
}

// stream numbers a random stream of tenant for route picks: n = 0 for an
// open-model tenant's, n = u+1 for closed-model user u's. The numbers are
// apart from TenantRand's (tenant+1, below 2^32).
func stream(tenant int32, n int) uint64 {
	return 1<<63 | uint64(uint32(tenant))<<24 | uint64(n)&(1<<24-1)
}

// user is one closed-model user, following its tenant's loop
// (workload.Closed), which the simulator's users follow too.
func (d *Driver) user(ctx context.Context, start time.Time, t *tenant, rt *h1.Client, rng *rand.Rand, out chan<- workload.Result) {
	next, more := t.loop.First()
	d.userFrom(ctx, start, t, rt, rng, out, 0, next, more)
}

// userFrom goes on with a user's loop, done iterations done, from its
// send at model time next (when more).
func (d *Driver) userFrom(ctx context.Context, start time.Time, t *tenant, rt *h1.Client, rng *rand.Rand, out chan<- workload.Result, done int, next time.Duration, more bool) {
	for more {
		paced, ok := d.wait(ctx, start, next)
		if !ok {
			return
		}
		if ctx.Err() != nil {
			return
		}
		route := t.mix.Pick(rng)
		r, ok := d.do(ctx, start, t, rt, route, next, paced)
		if !ok {
			return
		}
		out <- r
		// From when the answer came, not Intended+Latency: the latency
		// has the tare taken off, and the user acts on the real clock.
		next, more = t.loop.Next(&done, r.Intended, max(d.scale.Model(time.Since(start)), r.Intended+r.Latency), r.Outcome)
	}
}
