package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"stampede/clock"
	"stampede/fakebackend"
	"stampede/internal/h1"
	"stampede/limiterproxy"
	"stampede/scenarios"
	"stampede/workload"
)

// Defaults of DriverOptions.
const (
	// resultBuffer is how many results may wait for the sink goroutine before
	// producers block on it.
	resultBuffer = 8192
)

// The answer's headers the driver reads, as h1.Client.Get passes them.
var (
	serviceHeader = []byte(fakebackend.HeaderService)
	limitHeader   = []byte(limiterproxy.LimitHeader)
)

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

// Counters are a driver's live counts, for progress displays. The zero value
// is ready to use; it is safe for concurrent use, every field updated
// atomically.
type Counters struct {
	start     atomic.Int64  // wall start of the run, Unix nanoseconds; 0 before
	scale     atomic.Uint64 // float64 bits of the time scale
	sent      atomic.Uint64
	inFlight  atomic.Int64
	abandoned atomic.Uint64
	outcomes  [workload.NumOutcomes]atomic.Uint64
}

// Progress is a snapshot of Counters.
type Progress struct {
	Elapsed   time.Duration                // model time since the start of the run; 0 before it
	Sent      uint64                       // requests sent
	InFlight  int64                        // requests sent whose end is not yet known
	Outcomes  [workload.NumOutcomes]uint64 // results handed to the sink, by outcome (Dropped included)
	Abandoned uint64                       // requests cut off by cancellation of Run's context; never recorded
}

// Snapshot returns the counts now. The fields are read one by one, so a
// request that ends during the call may be seen both in flight and done.
func (c *Counters) Snapshot() Progress {
	var p Progress
	if s := c.start.Load(); s != 0 {
		scale := math.Float64frombits(c.scale.Load())
		if scale <= 0 {
			scale = 1
		}
		p.Elapsed = time.Duration(float64(time.Since(time.Unix(0, s))) / scale)
	}
	p.Sent = c.sent.Load()
	p.InFlight = c.inFlight.Load()
	p.Abandoned = c.abandoned.Load()
	for i := range c.outcomes {
		p.Outcomes[i] = c.outcomes[i].Load()
	}
	return p
}

// tenant is one tenant's sending state.
type tenant struct {
	index    int32
	host     string
	load     *scenarios.Load
	rt       http.RoundTripper
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

	pool    []http.RoundTripper // with an address pool (addrs): one per address, by visitor (scenarios.Tenant.VisitorAddr)
	arrived int                 // open model: arrivals sent so far, the next visitor's number; the scheduler's alone
}

// Driver sends a scenario's load over HTTP: open-model tenants at their
// intended times from one scheduler goroutine, closed-model users as one
// goroutine each. Latency counts from the intended send time and is
// converted to model time. A Driver runs once; Progress is safe to call from
// any goroutine at any time.
type Driver struct {
	opts       DriverOptions
	scale      float64
	reject     []int
	maxFlight  int64
	urls       []*url.URL
	uris       []string // urls' request targets
	tenants    []*tenant
	transports []idleCloser
	counters   *Counters
	openFlight atomic.Int64
	ran        atomic.Bool
	pacer      clock.Pacer
	late       *latenessRecorder
	stalls     stallRecorder
	tare       atomic.Int64 // nanoseconds
}

// NewDriver validates opts and prepares one HTTP transport per distinct
// client address. It sends nothing.
func NewDriver(opts DriverOptions) (*Driver, error) {
	if opts.Target == nil || opts.Target.Scheme != "http" || opts.Target.Host == "" {
		return nil, fmt.Errorf("loadgen: target %v: want an http:// URL with a host", opts.Target)
	}
	d := &Driver{opts: opts, scale: opts.TimeScale, reject: opts.RejectStatuses, counters: opts.Counters, late: newLatenessRecorder()}
	if d.scale == 0 {
		d.scale = 1
	}
	if opts.Tare < 0 {
		return nil, fmt.Errorf("loadgen: tare %v: want zero or more", opts.Tare)
	}
	d.tare.Store(int64(opts.Tare))
	if d.scale < 0 || math.IsNaN(d.scale) || math.IsInf(d.scale, 0) {
		return nil, fmt.Errorf("loadgen: time scale %v: want a positive number", opts.TimeScale)
	}
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
		d.urls = append(d.urls, &u)
		d.uris = append(d.uris, u.RequestURI())
	}
	loopback := opts.Dial != nil || isLoopbackV4(opts.Target.Hostname())
	byAddr := map[string]http.RoundTripper{}
	transportFor := func(addr string) (http.RoundTripper, error) {
		if tr, ok := byAddr[addr]; ok {
			return tr, nil
		}
		tr, err := d.transport(addr)
		if err != nil {
			return nil, err
		}
		byAddr[addr] = tr
		d.transports = append(d.transports, tr.(idleCloser))
		return tr, nil
	}
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
		t.timeout = d.wall(sc.Load.ClientTimeout)
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
		if n := sc.PoolSize(); loopback && n > 1 {
			t.pool = make([]http.RoundTripper, n)
			for v := range t.pool {
				if t.pool[v], err = transportFor(sc.VisitorAddr(v)); err != nil {
					return nil, fmt.Errorf("loadgen: tenant %s: %w", sc.Name, err)
				}
			}
		}
		d.tenants = append(d.tenants, t)
	}
	return d, nil
}

// visitor returns the round tripper of visitor v: the one from its address
// in the tenant's pool, or the tenant's own without a pool.
func (t *tenant) visitor(v int) http.RoundTripper {
	if len(t.pool) == 0 {
		return t.rt
	}
	return t.pool[v%len(t.pool)]
}

// isLoopbackV4 reports whether host is an IPv4 loopback address, the only
// kind of target a 127.x.y.z source address can reach.
func isLoopbackV4(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.To4() != nil && ip.IsLoopback()
}

// idleCloser is what Run needs of a transport when it ends.
type idleCloser interface{ CloseIdleConnections() }

// transport returns a keep-alive HTTP/1.1 client (h1.Client) whose
// connections come from the source address addr ("" for the system's
// choice): over DriverOptions.Dial, or TCP to the target.
func (d *Driver) transport(addr string) (http.RoundTripper, error) {
	var from netip.Addr
	if addr != "" {
		host := addr
		if h, _, err := net.SplitHostPort(addr); err == nil {
			host = h
		}
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return nil, fmt.Errorf("client address %q is not an IP address (want e.g. 127.0.0.2)", addr)
		}
		from = ip
	}
	return &h1.Client{Dial: d.dialer(from), MaxIdle: int(d.maxFlight)}, nil
}

// dialer returns how the driver's connections from the address from
// (zero: the system's choice) are made: DriverOptions.Dial, or TCP to the
// target.
func (d *Driver) dialer(from netip.Addr) func(ctx context.Context) (net.Conn, error) {
	if dial := d.opts.Dial; dial != nil {
		return func(ctx context.Context) (net.Conn, error) { return dial(ctx, from) }
	}
	nd := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if from.IsValid() {
		nd.LocalAddr = &net.TCPAddr{IP: from.AsSlice()}
	}
	addr := d.opts.Target.Host
	if d.opts.Target.Port() == "" {
		addr = net.JoinHostPort(d.opts.Target.Hostname(), "80")
	}
	return func(ctx context.Context) (net.Conn, error) { return nd.DialContext(ctx, "tcp", addr) }
}

// wall converts model time to wall time.
func (d *Driver) wall(m time.Duration) time.Duration { return time.Duration(float64(m) * d.scale) }

// model converts wall time to model time.
func (d *Driver) model(w time.Duration) time.Duration { return time.Duration(float64(w) / d.scale) }

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
	deadline := start.Add(d.wall(at))
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
	c.scale.Store(math.Float64bits(d.scale))
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
	for _, t := range d.tenants {
		if t.load.Model == scenarios.Closed {
			for u := range t.load.Users {
				rng := rand.New(rand.NewPCG(d.opts.Seed, stream(t.index, u+1)))
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

	finished := make(chan struct{})
	go func() {
		producers.Wait()
		close(finished)
	}()
	if d.opts.Drain > 0 {
		deadline := time.NewTimer(time.Until(start.Add(d.wall(d.opts.Horizon) + d.opts.Drain)))
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

// consumeBatch is how long the sink goroutine lets results gather before
// taking them, while they come faster than one per batch: waking it for
// each result would cost a hand-off between goroutines per request.
const consumeBatch = 2 * time.Millisecond

// consume hands results to sink, and calls Sample between them. While
// results come in bunches it takes them a batch at a time (consumeBatch);
// otherwise it wakes for each.
func (d *Driver) consume(start time.Time, results <-chan workload.Result, sink workload.Sink, done chan<- struct{}) {
	defer close(done)
	var tick <-chan time.Time
	if d.opts.Sample != nil {
		every := d.opts.SampleEvery
		if every <= 0 {
			every = max(d.wall(time.Second), 5*time.Millisecond)
		}
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		tick = ticker.C
	}
	batch := time.NewTimer(consumeBatch)
	batch.Stop()
	defer batch.Stop()
	// One Result reused: sinks must not keep the pointer past Add.
	var r workload.Result
	add := func(res workload.Result) {
		r = res
		d.counters.outcomes[r.Outcome].Add(1)
		if r.Outcome != workload.Dropped {
			d.late.record(time.Duration(r.Late) * time.Microsecond)
		}
		sink.Add(&r)
	}
	n := 0 // results taken at the last wake
	for {
		if n >= 2 {
			batch.Reset(consumeBatch)
			select {
			case <-batch.C:
			case now := <-tick:
				d.opts.Sample(d.model(now.Sub(start)))
			}
			n = 0
		} else {
			select {
			case res, ok := <-results:
				if !ok {
					return
				}
				add(res)
				n = 1
			case now := <-tick:
				d.opts.Sample(d.model(now.Sub(start)))
				n = 0
			}
		}
		for more := true; more; {
			select {
			case res, ok := <-results:
				if !ok {
					return
				}
				add(res)
				n++
			default:
				more = false
			}
		}
	}
}

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
// from one timer, each request on a sender of the pool (senders), which it
// waits for before returning.
func (d *Driver) schedule(ctx context.Context, start time.Time, open []*tenant, out chan<- workload.Result) {
	pool := newSenders(int(d.maxFlight), func(s send) {
		defer d.openFlight.Add(-1)
		defer s.t.inFlight.Add(-1)
		if r, ok := d.do(ctx, start, s.t, s.rt, s.route, s.at, s.paced); ok {
			out <- r
		}
	})
	defer pool.close()
	h := make(arrivalHeap, 0, len(open))
	for _, t := range open {
		if at, ok := t.arrivals.Next(); ok {
			h = append(h, arrival{at, t})
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
	for len(h) > 0 {
		a := h[0]
		// A runtime timer alone sends up to a millisecond late, which is
		// 100 ms of model time at 0.01: PreciseTimers times the last
		// stretch with clock's high-resolution timer, aiming early by its
		// usual lateness.
		paced, ok := d.wait(ctx, start, a.at)
		if !ok {
			return
		}
		if ctx.Err() != nil {
			return
		}
		d.stalls.sent(start.Add(d.wall(a.at)), time.Now())
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
		rt := t.visitor(t.arrived) // each arrival a new visitor
		t.arrived++
		pool.start(send{t: t, rt: rt, route: route, at: a.at, paced: paced})
	}
}

// user is one closed-model user, following its tenant's loop
// (workload.Closed), which the simulator's users follow too.
func (d *Driver) user(ctx context.Context, start time.Time, t *tenant, rt http.RoundTripper, rng *rand.Rand, out chan<- workload.Result) {
	done := 0
	for next, more := t.loop.First(); more; {
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
		next, more = t.loop.Next(&done, r.Intended, max(d.model(time.Since(start)), r.Intended+r.Latency), r.Outcome)
	}
}

// serviceOf reads the fake backend's service header (model time, which is
// the worker time an answered request used) for Result.Work. A target that
// does not send it, or sends something else, gives zero: unknown. Requests
// that got no answer, or an error, have no worker time the driver can know,
// so their Work stays zero too.
func serviceOf(h []string) time.Duration {
	if len(h) == 0 {
		return 0
	}
	d, err := time.ParseDuration(h[0])
	if err != nil || d < 0 {
		return 0
	}
	return d
}

// do sends one request intended at model time intended and returns its
// result, or false when ctx's cancellation abandoned it. Paced says the
// pacer slept for this send and should learn how late it was.
func (d *Driver) do(ctx context.Context, start time.Time, t *tenant, rt http.RoundTripper, route int, intended time.Duration, paced bool) (workload.Result, bool) {
	res := workload.Result{Tenant: t.index, Route: int16(route), Intended: intended}
	reqCtx := ctx
	if t.timeout > 0 {
		var cancel context.CancelFunc
		reqCtx, cancel = context.WithTimeout(ctx, t.timeout)
		defer cancel()
	}

	c := d.counters
	c.sent.Add(1)
	c.inFlight.Add(1)
	defer c.inFlight.Add(-1)
	status := 0
	limited := false
	var service []string
	// Latency counts from the intended time, so a late send does not hide
	// a slow server, or from the send when the pacer woke early for it, so
	// an early one does not shorten the wait.
	from := start.Add(d.wall(intended))
	sent := time.Now()
	late := sent.Sub(from)
	res.Late = int32(min(max(late/time.Microsecond, math.MinInt32), math.MaxInt32))
	if paced {
		d.pacer.Observe(late)
	}
	if sent.Before(from) {
		from = sent
	}
	var err error
	if c, ok := rt.(*h1.Client); ok {
		status, err = c.Get(reqCtx, d.uris[route], t.host, func(name, value []byte) {
			switch {
			case bytes.EqualFold(name, serviceHeader):
				service = []string{string(value)}
			case bytes.EqualFold(name, limitHeader):
				limited = len(value) > 0
			}
		})
	} else {
		req := (&http.Request{
			Method:     http.MethodGet,
			URL:        d.urls[route],
			Proto:      "HTTP/1.1",
			ProtoMajor: 1,
			ProtoMinor: 1,
			Header:     http.Header{},
			Host:       t.host,
		}).WithContext(reqCtx)
		var resp *http.Response
		if resp, err = rt.RoundTrip(req); err == nil {
			status = resp.StatusCode
			service = resp.Header[fakebackend.HeaderService]
			limited = resp.Header.Get(limiterproxy.LimitHeader) != ""
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	end := time.Now()
	took := end.Sub(from)
	if err == nil {
		took = max(took-time.Duration(d.tare.Load()), 0)
	}
	res.Latency = d.model(took)
	switch {
	case err == nil:
		switch {
		case limited:
			res.Outcome = workload.Rejected
		case d.opts.MarkedRejections:
			res.Outcome = workload.Classify(status, nil) // no status is a rejection without the mark
		default:
			res.Outcome = workload.Classify(status, d.reject)
		}
		res.Status = int16(status)
		if res.Outcome == workload.OK {
			res.Work = serviceOf(service)
		}
	case ctx.Err() != nil:
		if !errors.Is(context.Cause(ctx), errDrainExpired) {
			c.abandoned.Add(1)
			return res, false
		}
		res.Outcome = workload.ClientTimeout
	case errors.Is(reqCtx.Err(), context.DeadlineExceeded):
		res.Outcome = workload.ClientTimeout
	default:
		res.Outcome = workload.Error
	}
	return res, true
}
