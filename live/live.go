// Package live plays a scenario in real time over loopback HTTP: the fake
// backend and the limiting proxy run in-process (or an external target stands
// in for them), loadgen's driver sends every tenant's load through the proxy,
// and a report.Recorder turns the results into results.json.
package live

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync/atomic"
	"time"

	"stampede/fakebackend"
	"stampede/limiterproxy"
	"stampede/loadgen"
	"stampede/report"
	"stampede/scenarios"
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
	// fakebackend.Stats as JSON (fakebackend.StatsPath); it is polled for the
	// busy/queue series. Empty means no backend samples.
	BackendStatsURL string
	// AllowRemote lets Target and BackendStatsURL be outside loopback.
	// False refuses them.
	AllowRemote bool
	// Counters, when not nil, receive the driver's live counts, for a
	// progress display that polls Counters.Snapshot while Run runs.
	Counters *loadgen.Counters
	// MaxInFlight caps open-model requests in flight; zero means
	// loadgen.DefaultMaxInFlight.
	MaxInFlight int
	// SampleEvery is the model time between samples of the backend and the
	// limiter's busiest keys. Zero means one model second (but no more
	// often than every 5 ms of wall time).
	SampleEvery time.Duration
	// Version and CommandLine are recorded in results.json.
	Version     string
	CommandLine string
}

// drainMargin is the wall time added to the longest timeout of a scenario
// when bounding how long requests in flight at the end may take.
const drainMargin = time.Second

// Run plays sc: unless opts.Target is set it starts the fake backend and the
// limiting proxy on 127.0.0.1 with random ports, drives the load through the
// proxy for sc.Duration × sc.TimeScale of wall time, lets the requests in
// flight end (bounded by the scenario's longest timeout), samples the
// backend's busy workers and queue and the limiter's busiest keys about every
// model second, and returns results.json with engine "live".
//
// When ctx is cancelled Run stops the load at once and returns the results
// recorded so far, marked Interrupted, with a nil error. Requests cut off by
// the cancellation are not recorded (see loadgen.Driver.Run). Run shuts down
// every server it started before returning.
func Run(ctx context.Context, sc *scenarios.Scenario, opts Options) (*report.Results, error) {
	scale := sc.TimeScale
	if scale == 0 {
		scale = 1
	}
	wall := func(m time.Duration) time.Duration { return time.Duration(float64(m) * scale) }

	var (
		pr      *pair
		target  *url.URL
		policy  *limiterproxy.Policy
		stats   func() (fakebackend.Stats, bool)
		cleanup []func()
	)
	defer func() {
		for _, f := range slices.Backward(cleanup) {
			f()
		}
	}()

	if opts.Target == "" {
		p, err := startPair(sc, scale)
		if err != nil {
			return nil, err
		}
		pr = p
		cleanup = append(cleanup, p.close)
		target, policy = p.proxyURL, p.policy
		stats = func() (fakebackend.Stats, bool) { return p.backend.Stats(), true }
	} else {
		var err error
		if target, err = checkTarget(ctx, "target", opts.Target, opts.AllowRemote); err != nil {
			return nil, &TargetError{err}
		}
		if err := reachable(ctx, target); err != nil {
			return nil, &TargetError{err}
		}
		if opts.BackendStatsURL != "" {
			u, err := checkTarget(ctx, "backend stats URL", opts.BackendStatsURL, opts.AllowRemote)
			if err != nil {
				return nil, &TargetError{err}
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

	rec := report.NewRecorder(sc)
	sample := func(at time.Duration) {
		if stats != nil {
			if s, ok := stats(); ok {
				rec.SampleBackend(at, s.Busy, s.Queued)
			}
		}
		if policy != nil {
			busiest := policy.Busiest(10)
			m := make(map[string]int, len(busiest))
			for _, k := range busiest {
				m[k.Key] = k.InFlight
			}
			rec.SampleKeys(at, m)
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
			return nil, fmt.Errorf("live: scenario %s: calibrating: %w", sc.Name, err)
		}
		defer probes.close()
		// Cut off by ctx, the run is interrupted before it began: the
		// driver returns at once and the results say so.
		if tare, err = probes.calibrate(ctx, &tracker); err != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("live: scenario %s: calibrating: %w", sc.Name, err)
		}
	}

	drv, err := loadgen.NewDriver(loadgen.DriverOptions{
		Tare:           tare,
		Target:         target,
		PreciseTimers:  true,
		Tenants:        sc.Expand(),
		Routes:         sc.Backend.Routes,
		Horizon:        sc.Duration,
		TimeScale:      scale,
		Seed:           sc.Seed,
		RejectStatuses: RejectStatuses(sc.Proxy.Limits),
		// The built-in proxy marks its limits' answers; a target may not.
		MarkedRejections: pr != nil,
		MaxInFlight:      opts.MaxInFlight,
		Drain:            Drain(sc),
		Sample:           sample,
		SampleEvery:      max(wall(every), 5*time.Millisecond),
		Counters:         opts.Counters,
	})
	if err != nil {
		return nil, fmt.Errorf("live: scenario %s: %w", sc.Name, err)
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
	start := time.Now()
	runErr := drv.Run(ctx, start, rec)
	elapsed := time.Since(start)
	stopProbes()
	interrupted := ctx.Err() != nil
	if runErr != nil && !interrupted {
		return nil, fmt.Errorf("live: scenario %s: %w", sc.Name, runErr)
	}
	// The driver's sink goroutine has ended: the recorder is ours again.
	modelElapsed := time.Duration(float64(elapsed) / scale)
	sample(modelElapsed)
	var end fakebackend.Stats
	if stats != nil {
		end, _ = stats()
	}
	info := report.RunInfo{
		Tare:         tare,
		SendLateness: drv.SendLateness(),
		Engine:       Engine,
		Start:        start,
		Wall:         elapsed,
		Interrupted:  interrupted,
		Backend:      end,
		Version:      opts.Version,
		CommandLine:  opts.CommandLine,
	}
	if interrupted {
		// The run got this far into the model; a whole run covers at least
		// the scenario's duration, which the recorder takes by default.
		info.Model = min(modelElapsed, sc.Duration)
	}
	return rec.Results(info), nil
}

// RejectStatuses returns the statuses the limits in cfg answer with, 503
// when none says otherwise.
func RejectStatuses(cfg limiterproxy.Config) []int {
	st := []int{limiterproxy.DefaultStatus}
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

// Drain returns, in wall time, how long requests still in flight at the end
// of sc's load may take: its longest timeout (client, proxy read, backend
// worker) played at its time scale, plus a margin. Zero when sc has no
// timeout at all, meaning wait for every request.
func Drain(sc *scenarios.Scenario) time.Duration {
	longest := max(sc.Proxy.ReadTimeout, sc.Backend.Timeout)
	for _, g := range sc.Tenants {
		longest = max(longest, g.Load.ClientTimeout)
	}
	if longest == 0 {
		return 0
	}
	scale := sc.TimeScale
	if scale == 0 {
		scale = 1
	}
	return time.Duration(float64(longest)*scale) + drainMargin
}

// checkTarget parses raw, an http URL, and refuses hosts outside loopback
// unless allowRemote.
// TargetError says Options.Target or BackendStatsURL is unusable: not an
// http URL, or outside loopback without AllowRemote. It is the caller's
// mistake, not the run's.
type TargetError struct{ Err error }

func (e *TargetError) Error() string { return e.Err.Error() }
func (e *TargetError) Unwrap() error { return e.Err }

func checkTarget(ctx context.Context, what, raw string, allowRemote bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("live: %s %q: want an http:// URL with a host (e.g. http://127.0.0.1:8080)", what, raw)
	}
	if allowRemote {
		return u, nil
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); ip != nil {
		if !ip.IsLoopback() {
			return nil, fmt.Errorf("live: %s %q is outside loopback (allow it with --allow-remote)", what, raw)
		}
		return u, nil
	}
	ips, err := net.DefaultResolver.LookupIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("live: %s %q: %w", what, raw, err)
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return nil, fmt.Errorf("live: %s %q resolves to %v, outside loopback (allow it with --allow-remote)", what, raw, ip)
		}
	}
	return u, nil
}

// reachTimeout bounds reachable's connection attempt.
const reachTimeout = 2 * time.Second

// reachable reports, before a run against target starts, that nothing
// accepts connections there, rather than letting every request of the run
// fail the same way.
func reachable(ctx context.Context, target *url.URL) error {
	addr := target.Host
	if target.Port() == "" {
		addr = net.JoinHostPort(target.Hostname(), "80")
	}
	d := net.Dialer{Timeout: reachTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		return c.Close()
	}
	if ctx.Err() != nil {
		// Interrupted before the run began: the driver returns at once and
		// the results say so, whatever the target.
		return nil
	}
	return fmt.Errorf("live: target %q: nothing accepts connections at %s (%w); start the proxy first", target.String(), addr, err)
}

// statsPoller keeps the latest backend stats fetched from a URL.
type statsPoller struct {
	url    *url.URL
	every  time.Duration
	client *http.Client
	last   atomic.Pointer[fakebackend.Stats]
}

func newStatsPoller(u *url.URL, every time.Duration) *statsPoller {
	return &statsPoller{url: u, every: every, client: &http.Client{Timeout: 2 * time.Second}}
}

// latest returns the last stats fetched, false before the first.
func (p *statsPoller) latest() (fakebackend.Stats, bool) {
	if s := p.last.Load(); s != nil {
		return *s, true
	}
	return fakebackend.Stats{}, false
}

// run fetches the stats every p.every until ctx is done. A failed fetch
// keeps the previous stats: a sample is better late than invented.
func (p *statsPoller) run(ctx context.Context) {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		p.fetch(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *statsPoller) fetch(ctx context.Context) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url.String(), nil)
	if err != nil {
		return
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return
	}
	var s fakebackend.Stats
	if json.NewDecoder(resp.Body).Decode(&s) == nil {
		p.last.Store(&s)
	}
}

// pair is the built-in backend and proxy, each on its own loopback server.
type pair struct {
	backend  *fakebackend.Backend
	policy   *limiterproxy.Policy
	proxyURL *url.URL

	stopBackend context.CancelFunc
	backendDone chan struct{}
	proxy       *http.Server
	proxyDone   chan struct{}
	rp          http.Handler // the reverse proxy behind the limits
}

// proxyMaxConns bounds the built-in proxy's connections: above the driver's
// default in-flight cap, below a typical open-file limit.
const proxyMaxConns = 16384

// startPair starts the time-scaled fake backend and the limiting proxy in
// front of it, each on 127.0.0.1 at a random port.
func startPair(sc *scenarios.Scenario, scale float64) (*pair, error) {
	routes := make([]fakebackend.Route, len(sc.Backend.Routes))
	for i, r := range sc.Backend.Routes {
		routes[i] = fakebackend.Route{Name: r.Name, Path: r.Path, Service: r.Service}
	}
	b, err := fakebackend.New(fakebackend.Options{Pool: sc.Backend.PoolConfig(), Routes: routes, TimeScale: scale, Seed: sc.Seed, KeepAlive: true, PreciseTimers: true})
	if err != nil {
		return nil, fmt.Errorf("live: scenario %s: backend: %w", sc.Name, err)
	}
	policy, err := limiterproxy.NewPolicy(sc.Proxy.Limits)
	if err != nil {
		return nil, fmt.Errorf("live: scenario %s: proxy: %w", sc.Name, err)
	}
	bln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("live: scenario %s: backend: %w", sc.Name, err)
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
	pln, err := limiterproxy.Listen("127.0.0.1:0", opts)
	if err != nil {
		p.close()
		return nil, fmt.Errorf("live: scenario %s: proxy: %w", sc.Name, err)
	}
	upstream := &url.URL{Scheme: "http", Host: bln.Addr().String()}
	rp := limiterproxy.NewProxy(upstream, limiterproxy.ProxyOptions{
		ReadTimeout: time.Duration(float64(sc.Proxy.ReadTimeout) * scale),
		// A connection per request would spend a third of the run's CPU
		// in connect and close; the pool works per request either way.
		KeepAlive: true,
	})
	p.proxy = limiterproxy.NewServer(&limiterproxy.Handler{Policy: policy, Next: rp, TimeScale: scale, PreciseTimers: true}, opts)
	p.rp = rp
	p.proxyURL = &url.URL{Scheme: "http", Host: pln.Addr().String()}
	p.proxyDone = make(chan struct{})
	go func() {
		defer close(p.proxyDone)
		_ = p.proxy.Serve(pln) // ErrServerClosed once close runs
	}()
	return p, nil
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
