package live

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"time"

	"stampede/clock"
	"stampede/fakebackend"
	"stampede/internal/memnet"
	"stampede/limit"
	"stampede/limiterproxy"
	"stampede/loadgen"
	"stampede/report"
	"stampede/scenarios"
	"stampede/workerpool"
	"stampede/workload"
)

// Engine is the engine name results.json records for live runs.
const Engine = "live"

// Options configure Run. The zero value runs the built-in backend and proxy.
type Options struct {
	// Target, when not empty, is the URL of an external proxy (for example
	// nginx in front of `stampede backend`) to drive instead of the built-in
	// pair, which is then not started.
	Target string
	// BackendStatsURL, with Target, is where the backend answers its
	// workerpool.Stats as JSON (fakebackend.StatsPath); it is polled for the
	// busy/queue series. Empty means no backend samples.
	BackendStatsURL string
	// AllowRemote lets Target and BackendStatsURL be outside loopback.
	// False refuses them.
	AllowRemote bool
	// Counters, when not nil, receive the driver's live counts, for a
	// progress display that polls Counters.Snapshot while Run runs.
	Counters *loadgen.Counters
	// MaxInFlight caps open-model requests in flight; zero means
	// workload.DefaultMaxInFlight.
	MaxInFlight int
	// SampleEvery is the model time between samples of the backend and the
	// limiter's busiest keys. Zero means one model second (but no more
	// often than every 5 ms of wall time).
	SampleEvery time.Duration
	// Transport carries the built-in pair's connections: Memory (the
	// default when empty) or TCP. A Target is always reached over TCP.
	Transport string
	// RuntimeTimers times every wait with the runtime's timers alone,
	// which testing/synctest's fake clock needs (with the Memory
	// transport, whose connections block durably, a whole run then plays
	// in fake time, deterministically). False times sub-millisecond waits
	// with a kernel high-resolution timer (package clock).
	RuntimeTimers bool
	// Calibrated, when not nil, is told what a time_scale: auto
	// calibration chose, before the run starts.
	Calibrated func(Calibration)
	// Sampler receives samples of the backend and the busiest keys. Nil
	// means the sink when it implements workload.Sampler, else no
	// sampling.
	Sampler workload.Sampler
	// Version and CommandLine are recorded in the run's RunInfo.
	Version     string
	CommandLine string
}

// drainMargin is the wall time added to the scenario's drain
// (workload.Drain) when bounding how long requests in flight at the end may
// take: the path's own time, which the model does not count.
const drainMargin = time.Second

// Run plays sc: unless opts.Target is set it starts the fake backend and the
// limiting proxy on 127.0.0.1 with random ports, drives the load through the
// proxy for sc.Duration × sc.TimeScale of wall time, lets the requests in
// flight end (within the scenario's drain, workload.Drain), hands every
// result to sink from one goroutine at a time, samples the backend's busy
// workers and queue and the limiter's busiest keys about every model second,
// and returns what the recorder needs beside the results: RunInfo with
// engine "live" and the run's verdict on itself (Validity; see Explain).
//
// When ctx is cancelled Run stops the load at once and returns the run as
// interrupted (RunInfo.Model says how far it got, workload.Reached), with a
// nil error, as the simulator does. Requests cut off by the cancellation are
// not recorded (see loadgen.Driver.Run). Run shuts down every server it
// started before returning.
func Run(ctx context.Context, sc *scenarios.Scenario, sink workload.Sink, opts Options) (report.RunInfo, error) {
	info, _, err := runMeasured(ctx, sc, sink, opts)
	return info, err
}

// runMeasured is Run, and returns beside its RunInfo what the run measured of
// itself in wall time, which a calibration step reads.
func runMeasured(ctx context.Context, sc *scenarios.Scenario, sink workload.Sink, opts Options) (report.RunInfo, measured, error) {
	var (
		none report.RunInfo
		m    measured
	)
	auto := sc.TimeScaleAuto
	if auto && opts.Target == "" {
		cal, err := Calibrate(ctx, sc, opts.Transport)
		if err != nil {
			return none, m, fmt.Errorf("live: scenario %s: calibrating the time scale: %w", sc.Name, err)
		}
		if opts.Calibrated != nil {
			opts.Calibrated(cal)
		}
		c := *sc
		c.TimeScale = cal.Scale
		sc = &c
	}
	// Against a target, auto is real time: nginx-config writes the
	// target's configuration for time scale 1 then.
	scale := clock.Scale(sc.TimeScale)
	wall := scale.Wall

	var (
		pr      *pair
		target  *url.URL
		policy  *limit.Policy
		stats   func() (workerpool.Stats, bool)
		cleanup []func()
	)
	defer func() {
		for _, f := range slices.Backward(cleanup) {
			f()
		}
	}()

	if opts.Target == "" {
		p, err := startPair(sc, scale, opts.Transport, !opts.RuntimeTimers)
		if err != nil {
			return none, m, err
		}
		pr = p
		cleanup = append(cleanup, p.close)
		target, policy = p.proxyURL, p.policy
		stats = func() (workerpool.Stats, bool) { return p.backend.Stats(), true }
	} else {
		var err error
		if target, err = checkTarget(ctx, "target", opts.Target, opts.AllowRemote); err != nil {
			return none, m, &TargetError{err}
		}
		if err := reachable(ctx, target); err != nil {
			return none, m, &TargetError{err}
		}
		if opts.BackendStatsURL != "" {
			u, err := checkTarget(ctx, "backend stats URL", opts.BackendStatsURL, opts.AllowRemote)
			if err != nil {
				return none, m, &TargetError{err}
			}
			pctx, cancel := context.WithCancel(ctx)
			poll := newStatsPoller(u, max(wall(time.Second), 50*time.Millisecond))
			done := make(chan struct{})
			go func() {
				defer close(done)
				poll.run(pctx)
			}()
			cleanup = append(cleanup, func() { cancel(); <-done })
			stats = poll.latest
		}
	}

	sampler := workload.SamplerOf(opts.Sampler, sink)
	sample := func(at time.Duration) {
		if sampler == nil {
			return
		}
		if stats != nil {
			if s, ok := stats(); ok {
				sampler.SampleBackend(at, s.Busy, s.Queued)
			}
		}
		if policy != nil {
			busiest := policy.Busiest(10)
			m := make(map[string]int, len(busiest))
			for _, k := range busiest {
				m[k.Key] = k.InFlight
			}
			sampler.SampleKeys(at, m)
		}
	}
	every := opts.SampleEvery
	if every <= 0 {
		every = time.Second
	}

	var (
		tare    time.Duration
		tracker tareTracker
		probes  *prober
	)
	if pr != nil {
		var err error
		if probes, err = pr.newProber(probeWait(sc, scale)); err != nil {
			return none, m, fmt.Errorf("live: scenario %s: calibrating: %w", sc.Name, err)
		}
		defer probes.close()
		// Cut off by ctx, the run is interrupted before it began: the
		// driver returns at once and the results say so.
		if tare, err = probes.calibrate(ctx, &tracker); err != nil && ctx.Err() == nil {
			return none, m, fmt.Errorf("live: scenario %s: calibrating: %w", sc.Name, err)
		}
	}

	tenants := sc.Expand()
	drv, err := loadgen.NewDriver(loadgen.DriverOptions{
		Tare:           tare,
		Target:         target,
		PreciseTimers:  !opts.RuntimeTimers,
		Tenants:        tenants,
		Routes:         sc.Backend.Routes,
		Horizon:        sc.Duration,
		TimeScale:      scale.Factor(),
		Seed:           sc.Seed,
		RejectStatuses: RejectStatuses(sc.Proxy.Limits),
		// The built-in proxy marks its limits' answers; a target may not.
		MarkedRejections: pr != nil,
		MaxInFlight:      opts.MaxInFlight,
		Drain:            wall(workload.Drain(sc, tenants)) + drainMargin,
		Sample:           sample,
		SampleEvery:      max(wall(every), 5*time.Millisecond),
		Counters:         opts.Counters,
		Dial:             dialOf(pr),
	})
	if err != nil {
		return none, m, fmt.Errorf("live: scenario %s: %w", sc.Name, err)
	}

	stopProbes := func() {}
	if probes != nil {
		pctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			probes.track(pctx, &tracker, drv)
		}()
		stopProbes = func() {
			cancel()
			<-done
			tare = tracker.runTare()
		}
	}
	// The connections the run needs at once are opened before its clock
	// starts, so that no send waits for a dial the run could have made
	// ahead (and, cut off by ctx, the run is interrupted before it began).
	drv.Connect(ctx)
	before := sampleOS()
	wakes := clock.WakeSnapshot()
	start := time.Now()
	if sink == nil {
		sink = workload.SinkFunc(func(*workload.Result) {})
	}
	runErr := drv.Run(ctx, start, sink)
	elapsed := time.Since(start)
	stopProbes()
	after := sampleOS()
	interrupted := ctx.Err() != nil
	if runErr != nil && !interrupted {
		return none, m, fmt.Errorf("live: scenario %s: %w", sc.Name, runErr)
	}
	// The driver's sink goroutine has ended: the sampler is ours again.
	modelElapsed := scale.Model(elapsed)
	sample(modelElapsed)
	var end workerpool.Stats
	if stats != nil {
		end, _ = stats()
	}
	m = measured{
		scale:    scale,
		wall:     elapsed,
		lateness: drv.SendLateness(),
		stalls:   drv.Stalls(),
		tare:     probes != nil && tracker.n > 0,
		tareMin:  tracker.lo,
		tareMax:  tracker.hi,
		before:   before,
		after:    after,
		sent:     drv.Progress().Sent,
		wakes:    clock.WakeSnapshot().Sub(wakes),
	}
	validity := judge(sc, m)
	info := report.RunInfo{
		Validity:      validity,
		TimeScaleAuto: auto,
		TimeScale:     scale.Factor(),
		Tare:          tare,
		SendLateness:  m.lateness,
		Engine:        Engine,
		Start:         start,
		Wall:          elapsed,
		Interrupted:   interrupted,
		Backend:       end,
		Version:       opts.Version,
		CommandLine:   opts.CommandLine,
	}
	if interrupted {
		info.Model = workload.Reached(modelElapsed, sc.Duration)
	}
	return info, m, nil
}

// Explain completes the verdict of a run on itself in res, its results:
// when the run was inconclusive, it names the failed SLOs that the
// generator's own delay, as the verdict's figures state it (model time),
// cannot explain (Validity.Unexplained), which still fail the run. A
// conclusive run, as every simulated one is, is left as it is.
func Explain(res *report.Results, sc *scenarios.Scenario) {
	v := res.Validity
	if v == nil || v.Conclusive {
		return
	}
	explain(v, res.SLO, sc, worstDelay(v))
}

// dialOf returns the driver's dialer for pr: in memory, or nil for TCP.
func dialOf(pr *pair) func(ctx context.Context, from netip.Addr) (net.Conn, error) {
	if pr == nil {
		return nil
	}
	return pr.dial
}

// RejectStatuses returns the statuses the limits in cfg answer with, 503
// when none says otherwise.
func RejectStatuses(cfg limit.Config) []int {
	st := []int{limit.DefaultStatus}
	add := func(s int) {
		if s != 0 && !slices.Contains(st, s) {
			st = append(st, s)
		}
	}
	for _, c := range cfg.Conn {
		add(c.Status)
	}
	for _, r := range cfg.Req {
		add(r.Status)
	}
	return st
}

// Transports of Options.Transport.
const (
	// Memory serves the built-in pair on in-memory listeners
	// (internal/memnet): the same HTTP/1.1 bytes through the same net/http
	// servers, without loopback TCP's system calls.
	Memory = "memory"
	// TCP serves the built-in pair on loopback TCP.
	TCP = "tcp"
)

// pair is the built-in backend and proxy, each on its own server, over
// loopback TCP or in memory.
type pair struct {
	backend  *fakebackend.Backend
	policy   *limit.Policy
	proxyURL *url.URL
	// dial, in memory, connects to the proxy from a client's address;
	// nil over TCP.
	dial func(ctx context.Context, from netip.Addr) (net.Conn, error)
	// listen makes a listener in front of rp for the prober, and how to
	// dial it: in memory, or on loopback TCP.
	listen func() (net.Listener, dialFunc, error)

	stopBackend context.CancelFunc
	backendDone chan struct{}
	proxy       server
	proxyDone   chan struct{}
	rp          http.Handler // the reverse proxy behind the limits
	// newServer makes the kind of server the proxy is, for the
	// prober's listener: its probes pay what a request does.
	newServer func(http.Handler) server
}

// server is a proxy's HTTP server: net/http's or the lean one.
type server interface {
	Serve(net.Listener) error
	Close() error
}

// dialFunc is http.Transport.DialContext.
type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// proxyMaxConns bounds the built-in proxy's connections: above the driver's
// default in-flight cap, below a typical open-file limit.
const proxyMaxConns = 16384

// memBacklog is the in-memory backend listener's accept queue. The fake
// backend accepts every connection at once and keeps its own backlog in
// its pool (workerpool.Config.Backlog), so the listener's queue only has
// to hold what arrives between two Accepts; it is as deep as the proxy has
// connections, so it never overflows first.
const memBacklog = proxyMaxConns

// Addresses of the in-memory pair, shown in URLs and logs.
var (
	memBackendAddr = netip.MustParseAddrPort("127.0.0.1:9000")
	memProxyAddr   = netip.MustParseAddrPort("127.0.0.1:8080")
	memProbeAddr   = netip.MustParseAddrPort("127.0.0.1:8081")
)

// startPair starts the time-scaled fake backend and the limiting proxy in
// front of it, over transport: Memory (the default when empty) or TCP,
// where each takes 127.0.0.1 at a random port. Precise says to time their
// waits with package clock's high-resolution timer.
func startPair(sc *scenarios.Scenario, scale clock.Scale, transport string, precise bool) (*pair, error) {
	b, err := fakebackend.New(fakebackend.Options{Pool: sc.PoolConfig(), Routes: backendRoutes(sc), TimeScale: scale.Factor(), Seed: sc.Seed, KeepAlive: true, PreciseTimers: precise})
	if err != nil {
		return nil, fmt.Errorf("live: scenario %s: backend: %w", sc.Name, err)
	}
	policy, err := limit.NewPolicy(sc.Proxy.Limits)
	if err != nil {
		return nil, fmt.Errorf("live: scenario %s: proxy: %w", sc.Name, err)
	}
	memory := transport != TCP
	wall := scale.Wall
	var (
		bln      net.Listener
		upstream *url.URL
		dialUp   dialFunc
	)
	if memory {
		overflow := memnet.Retry
		if sc.Backend.Overflow == workerpool.Reset {
			overflow = memnet.Refuse
		}
		ml := memnet.Listen(memnet.Options{
			Addr:     memBackendAddr,
			Backlog:  memBacklog,
			Overflow: overflow,
			// The kernel's SYN retransmissions are model time.
			RetryAfter: func(n int) (time.Duration, bool) {
				d, again := workerpool.SYNRetry(n)
				return wall(d), again
			},
		})
		bln = ml
		// The proxy's connect timeout (nginx proxy_connect_timeout) in
		// model time, as everything else in an in-memory run.
		connect := sc.Proxy.ConnectTimeout
		if connect <= 0 {
			connect = limiterproxy.DefaultConnectTimeout
		}
		connect = wall(connect)
		dialUp = func(ctx context.Context, _, _ string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, connect)
			defer cancel()
			return ml.Dial(ctx, netip.Addr{})
		}
		upstream = &url.URL{Scheme: "http", Host: memBackendAddr.String()}
	} else {
		if bln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("live: scenario %s: backend: %w", sc.Name, err)
		}
		upstream = &url.URL{Scheme: "http", Host: bln.Addr().String()}
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &pair{backend: b, policy: policy, stopBackend: cancel, backendDone: make(chan struct{})}
	go func() {
		defer close(p.backendDone)
		// Serve fails only if the listener does; requests then fail and
		// the run counts them as backend errors.
		_ = b.Serve(ctx, bln, nil)
	}()

	opts := limiterproxy.ServerOptions{MaxConns: proxyMaxConns}
	var pln net.Listener
	if memory {
		ml := memnet.Listen(memnet.Options{Addr: memProxyAddr, Backlog: proxyMaxConns})
		pln = limiterproxy.LimitListener(ml, proxyMaxConns)
		p.dial = ml.Dial
		p.listen = func() (net.Listener, dialFunc, error) {
			l := memnet.Listen(memnet.Options{Addr: memProbeAddr})
			return l, l.DialContext, nil
		}
	} else {
		if pln, err = limiterproxy.Listen("127.0.0.1:0", opts); err != nil {
			p.close()
			return nil, fmt.Errorf("live: scenario %s: proxy: %w", sc.Name, err)
		}
		p.listen = func() (net.Listener, dialFunc, error) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			return l, (&net.Dialer{}).DialContext, err
		}
	}
	rp := limiterproxy.NewProxy(upstream, limiterproxy.ProxyOptions{
		ReadTimeout:    wall(sc.Proxy.ReadTimeout),
		ConnectTimeout: wall(sc.Proxy.ConnectTimeout),
		SendTimeout:    wall(sc.Proxy.SendTimeout),
		// A connection per request would spend a third of the run's CPU
		// in connect and close; the pool works per request either way,
		// and a killed worker's request is answered 502 once, as through
		// gunicorn, which closes every connection.
		UpstreamKeepAlive: 1024,
		NextUpstreamOff:   true,
		Dial:              dialUp,
	})
	// The proxy reads the backend's model clock, so that limit_req and the
	// pool agree on model time.
	h := &limiterproxy.Handler{Policy: policy, Next: rp, Clock: clock.Clock{Model: b.Clock(), Precise: precise}}
	// net/http's server reads every connection on a goroutine of its own
	// while a request is served; the lean one only while the request's
	// context is waited on.
	p.newServer = func(h http.Handler) server { return limiterproxy.NewServer(h, opts) }
	if memory {
		p.newServer = func(h http.Handler) server { return limiterproxy.NewLeanServer(h, opts) }
	}
	p.proxy = p.newServer(h)
	p.rp = rp
	p.proxyURL = &url.URL{Scheme: "http", Host: pln.Addr().String()}
	p.proxyDone = make(chan struct{})
	go func() {
		defer close(p.proxyDone)
		_ = p.proxy.Serve(pln) // ErrServerClosed once close runs
	}()
	return p, nil
}

// backendRoutes returns sc's routes as the fake backend takes them.
func backendRoutes(sc *scenarios.Scenario) []fakebackend.Route {
	routes := make([]fakebackend.Route, len(sc.Backend.Routes))
	for i, r := range sc.Backend.Routes {
		routes[i] = fakebackend.Route{Name: r.Name, Path: r.Path, Service: r.Service}
	}
	return routes
}

// close closes the proxy and every connection to it, then the backend,
// whose Close ends its handlers at once, and waits for both servers.
func (p *pair) close() {
	if p.proxy != nil {
		_ = p.proxy.Close()
		<-p.proxyDone
	}
	p.stopBackend()
	<-p.backendDone
}
