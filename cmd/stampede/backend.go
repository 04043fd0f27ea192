package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"stampede/clock"
	"stampede/fakebackend"
	"stampede/scenarios"
	"stampede/workerpool"
)

type backendFlags struct {
	listen        string
	scenario      string
	workers       int
	backlog       int
	timeout       time.Duration
	onClientAbort string
	routes        []string
	timeScale     float64
	seed          uint64

	threads           int
	boot              time.Duration
	maxRequests       int
	maxRequestsJitter int
	backlogOverflow   string
	accessLog         string
}

func newBackendCmd() *cobra.Command {
	var f backendFlags
	cmd := &cobra.Command{
		Use:   "backend [--listen ADDR] [--scenario FILE] [--workers N] [--backlog N] [--timeout D] [--route PATH=DIST]...",
		Short: "Run a fake gunicorn backend: sync workers, a FIFO backlog, a worker timeout",
		Long: `backend is a fake app server that behaves like gunicorn 20.1's sync workers, as
Frappe runs them: --workers processes each serve one request (--threads N: the
gthread worker, N at once); a worker accepts a connection only when it is free,
so further connections wait first-come first-served in the kernel's listen
--backlog (Linux queues backlog+1). Past it Linux drops the connection attempt
and the client retries it 1, 2, 4, ... s later (--backlog-overflow drop, the
default), or refuses it (reset: a proxy in front answers 502). A request still
running --timeout after a worker took it is killed with its worker on the
arbiter's next once-a-second tick (connection dropped, 502); gthread workers are
not killed that way. A worker that exits is replaced after --boot; with
--max-requests a worker is recycled after that many requests plus a draw up to
--max-requests-jitter. When a client goes away, --on-client-abort continue (the
default) keeps the worker busy until the work ends; cancel frees it.

--route PATH=DIST gives the service time of paths starting with PATH (the
longest prefix wins; repeatable). DIST is one of
    2s                                 constant
    exp:1s                             exponential with that mean
    uniform:2m..4m                     uniform between the two
    lognormal:median=30ms,p99=200ms    log-normal with that median and p99
    empirical:p0=1ms,p50=30ms,p100=4m  a quantile table, uniform between its points
Without --route every path is served at once; with routes, a path none matches
is answered 404 without a worker (add a "/" route to catch all).
--time-scale multiplies every duration: 0.01 plays 2 minutes in 1.2 seconds.

With --scenario, the backend settings, time scale and seed come from the
scenario file, and flags given explicitly override them (--route replaces all
of its routes). GET ` + fakebackend.StatsPath + ` answers busy workers, queue
length and the counters as JSON.`,
		Example: `  stampede backend --listen 127.0.0.1:9000 --workers 8 --timeout 120s \
      --route '/slow=uniform:2m..4m' --route '/=lognormal:median=30ms,p99=200ms' --time-scale 0.01`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runBackend(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:9000", "address to listen on, HOST:PORT")
	fl.StringVar(&f.scenario, "scenario", "", "take the backend settings from this scenario file")
	fl.IntVar(&f.workers, "workers", 8, "worker processes, each serving one request at a time")
	fl.IntVar(&f.backlog, "backlog", workerpool.DefaultBacklog, "requests that may wait for a worker; 0 means none")
	fl.DurationVar(&f.timeout, "timeout", 120*time.Second, "kill a request still running this long after a worker took it; 0 means never")
	fl.StringVar(&f.onClientAbort, "on-client-abort", "continue", "when a client goes away: continue (the worker finishes the work) or cancel")
	fl.StringArrayVar(&f.routes, "route", nil, "PATH=DIST: the service time of paths starting with PATH, e.g. '/slow=uniform:2m..4m' (repeatable)")
	fl.Float64Var(&f.timeScale, "time-scale", 1, "multiply every duration by this (0.01 = 100× faster)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the service-time draws, the arbiter's tick phase and the max-requests jitter")
	fl.IntVar(&f.threads, "threads", 1, "requests each worker serves at once; above 1 is gunicorn's gthread worker")
	fl.DurationVar(&f.boot, "boot", workerpool.DefaultBoot, "how long a replacement worker takes to be ready")
	fl.IntVar(&f.maxRequests, "max-requests", 0, "recycle a worker after this many requests; 0 means never")
	fl.IntVar(&f.maxRequestsJitter, "max-requests-jitter", 0, "add a draw from 0 to this to each worker's --max-requests")
	fl.StringVar(&f.backlogOverflow, "backlog-overflow", "drop", "a connection over the backlog: drop (Linux's default; the client retries) or reset (refused: 502)")
	fl.StringVar(&f.accessLog, "access-log", "", "append gunicorn-format access-log lines with the worker time (%(D)s) to this file, for stampede import --gunicorn-log")
	return cmd
}

// backendSettings are the flags that set a field of a scenario's backend,
// named as the field with "-" for "_": each given flag becomes the --set
// override of its field, held to the scenario file's rules.
var backendSettings = []string{"workers", "backlog", "timeout", "on-client-abort", "threads", "boot",
	"max-requests", "max-requests-jitter", "backlog-overflow"}

// scenarioBackend returns the options of the fake backend sc describes:
// its pool and routes, its time scale and seed.
func scenarioBackend(sc *scenarios.Scenario) fakebackend.Options {
	opts := fakebackend.Options{
		Pool:      sc.Backend.PoolConfig(),
		TimeScale: sc.TimeScale,
		Seed:      sc.Seed,
		// A time-scaled backend needs sub-millisecond timing.
		PreciseTimers: true,
	}
	for _, r := range sc.Backend.Routes {
		opts.Routes = append(opts.Routes, fakebackend.Route{Name: r.Name, Path: r.Path, Service: r.Service})
	}
	return opts
}

// backendOptions builds the backend's options from the scenario file, if
// any, and the flags; changed reports whether a flag was given explicitly.
func backendOptions(f *backendFlags, changed func(name string) bool) (fakebackend.Options, error) {
	opts := fakebackend.Options{
		TimeScale: f.timeScale,
		Seed:      f.seed,
		// A time-scaled backend needs sub-millisecond timing.
		PreciseTimers: true,
	}
	given := func(name string) bool { return f.scenario == "" || changed(name) }
	values := map[string]string{
		"workers": strconv.Itoa(f.workers), "backlog": strconv.Itoa(f.backlog), "timeout": f.timeout.String(),
		"on-client-abort": strconv.Quote(f.onClientAbort), "threads": strconv.Itoa(f.threads), "boot": f.boot.String(),
		"max-requests": strconv.Itoa(f.maxRequests), "max-requests-jitter": strconv.Itoa(f.maxRequestsJitter),
		"backlog-overflow": strconv.Quote(f.backlogOverflow),
	}
	var sets []string
	for _, name := range backendSettings {
		if given(name) {
			sets = append(sets, "backend."+strings.ReplaceAll(name, "-", "_")+"="+values[name])
		}
	}
	if f.scenario != "" {
		sc, err := scenarios.LoadWith(f.scenario, sets)
		if err != nil {
			return opts, flagErrors(err)
		}
		opts = scenarioBackend(sc)
	} else {
		b, err := scenarios.ParseBackend("flags", sets)
		if err != nil {
			return opts, flagErrors(err)
		}
		opts.Pool = b.PoolConfig()
	}
	if given("time-scale") {
		if err := clock.Scale(f.timeScale).Validate(); err != nil || f.timeScale == 0 {
			return opts, usagef("--time-scale %v: want a number above 0, e.g. 0.01 to play 100× faster", f.timeScale)
		}
		opts.TimeScale = f.timeScale
	}
	if given("seed") {
		opts.Seed = f.seed
	}
	opts.Pool.Seed = opts.Seed
	if changed("route") {
		opts.Routes = nil
		seen := map[string]bool{}
		for _, s := range f.routes {
			r, err := parseRoute(s)
			if err != nil {
				return opts, usagef("--route %q: %v", s, err)
			}
			if seen[r.Path] {
				return opts, usagef("--route %q: path %s is given twice", s, r.Path)
			}
			seen[r.Path] = true
			opts.Routes = append(opts.Routes, r)
		}
	}
	if _, _, err := net.SplitHostPort(f.listen); err != nil {
		return opts, usagef("--listen %q: want HOST:PORT, e.g. 127.0.0.1:9000", f.listen)
	}
	return opts, nil
}

// flagErrors says a scenario's mistakes that came from a flag's override
// in the flag's name, "--workers 70000: 70000 is over 65536 (want e.g.
// 8)", and the file's as they are; the error is bad usage.
func flagErrors(err error) error {
	var se *scenarios.Error
	if !errors.As(err, &se) {
		return asUsage(err)
	}
	var lines []string
	for _, e := range se.All() {
		path, value, _ := strings.Cut(e.Set, "=")
		name, ok := strings.CutPrefix(path, "backend.")
		if e.Set == "" || !ok {
			lines = append(lines, (&scenarios.Error{File: e.File, Line: e.Line, Col: e.Col, Set: e.Set, Path: e.Path, Msg: e.Msg}).Error())
			continue
		}
		lines = append(lines, fmt.Sprintf("--%s %s: %s", strings.ReplaceAll(name, "_", "-"), value, e.Msg))
	}
	return usageError{fmt.Errorf("%s", strings.Join(lines, "\n"))}
}

// parseRoute reads PATH=DIST. The path ends at the first "=", since a
// distribution may contain "=" but a route's path has no reason to.
func parseRoute(s string) (fakebackend.Route, error) {
	path, dist, ok := strings.Cut(s, "=")
	path = strings.TrimSpace(path)
	if !ok {
		return fakebackend.Route{}, fmt.Errorf("want PATH=DIST, e.g. '/slow=uniform:2m..4m'")
	}
	if err := workerpool.CheckPath(path); err != nil {
		return fakebackend.Route{}, fmt.Errorf("path %w", err)
	}
	d, err := workerpool.ParseDist(dist)
	if err != nil {
		return fakebackend.Route{}, err
	}
	return fakebackend.Route{Name: path, Path: path, Service: d}, nil
}

func runBackend(cmd *cobra.Command, f *backendFlags) error {
	defer tuneLiveGC()()
	opts, err := backendOptions(f, cmd.Flags().Changed)
	if err != nil {
		return err
	}
	if f.accessLog != "" {
		done, err := openAccessLog(f.accessLog, &opts)
		if err != nil {
			return err
		}
		defer done()
	}
	b, err := fakebackend.New(opts)
	if err != nil {
		return asUsage(err)
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return listenErr(f.listen, err)
	}
	defer ln.Close()
	// Serve sets it too; before "listening" is said, so that no
	// connection finds the system's larger default.
	if err := fakebackend.SetBacklog(ln, b.Backlog()); err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	s := b.Stats()
	timeout := "no timeout"
	if opts.Pool.Timeout > 0 {
		timeout = "timeout " + opts.Pool.Timeout.String()
	}
	threads := ""
	if s.Threads > 1 {
		threads = fmt.Sprintf(" × %d threads", s.Threads)
	}
	fmt.Fprintf(stderr, "backend listening on %s (%d workers%s, backlog %d, %s)\n", ln.Addr(), s.Workers, threads, s.Backlog, timeout)
	return b.Serve(cmd.Context(), ln, stderr)
}

// listenErr says which address could not be listened on and why, without
// net's "listen tcp" prefix and syscall name.
func listenErr(addr string, err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if errno == syscall.EADDRINUSE {
			return fmt.Errorf("listen %s: address already in use (is another backend running? choose another --listen)", addr)
		}
		return fmt.Errorf("listen %s: %w", addr, errno)
	}
	var se *os.SyscallError
	var oe *net.OpError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("listen %s: %w", addr, se.Err)
	case errors.As(err, &oe) && oe.Err != nil:
		return fmt.Errorf("listen %s: %w", addr, oe.Err)
	}
	return fmt.Errorf("listen %s: %w", addr, err)
}
