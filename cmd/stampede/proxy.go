package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"stampede/limit"
	"stampede/limiterproxy"
)

// shutdownGrace is how long Ctrl-C lets requests in flight finish.
const shutdownGrace = 10 * time.Second

type proxyFlags struct {
	listen      string
	upstream    string
	conns       []string
	reqs        []string
	status      int
	dryRun      bool
	readTimeout time.Duration
	connTimeout time.Duration
	// nginx's proxy_send_timeout, client_body_timeout, client_header_timeout
	sendTimeout, bodyTimeout, headerTimeout time.Duration
	metrics                                 string
	printNginx                              bool
	maxConns                                int
	keepAlive                               int    // nginx's upstream keepalive N
	server                                  string // "h1" or "epoll"
}

func newProxyCmd() *cobra.Command {
	var f proxyFlags
	cmd := &cobra.Command{
		Use:   "proxy --upstream URL [--listen ADDR] [--limit-conn SPEC]... [--limit-req SPEC]...",
		Short: "Run a reverse proxy with nginx's limit_conn and limit_req in front of an app",
		Long: `proxy is a reverse proxy with nginx's limit_conn and limit_req semantics.

--limit-conn KEY=N[,zone=10m][,status=429][,dry_run]
    at most N requests in flight per value of KEY, e.g. '$host=4'
--limit-req KEY=RATE[,burst=N][,nodelay|,delay=N][,zone=10m][,status=429][,dry_run]
    nginx's leaky bucket per value of KEY, e.g. '$binary_remote_addr=10r/s,burst=20,nodelay'

KEY is an nginx variable ($host, $binary_remote_addr, $remote_addr, $http_NAME,
$arg_NAME) or a concatenation; the "$" may be left out. limit_req runs before
limit_conn.

A limit of a location is written PATH:SPEC, e.g.
--limit-conn '/api/method/stock_balance:$host=4': the location is a URI
prefix (the longest matching one wins, as nginx picks a prefix location),
or several, '/a,/b:$host=4', for one location with them all;
a request matching no location gets the limits given without PATH. As in
nginx, a location with no --limit-conn of its own inherits the server's,
and likewise for --limit-req. The limits given with the same PATH form one
location.
A rejected request is answered --status with a header X-Stampede-Limit naming
the limit. --print-nginx prints the equivalent nginx.conf and exits.

--server epoll (Linux, with --upstream-keepalive N) serves in nginx's shape:
one epoll loop per CPU, each with its own listening socket (SO_REUSEPORT),
clients and N idle upstream connections, as nginx's workers. A loop serves
a plain HTTP/1.1 GET or HEAD without a body to a location whose limit_req
cannot delay itself, with the same limits, answers and timeouts; every
other request, and the rest of its connection, is handed to the default
server (h1) with the bytes already read, and answered as it would be there.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runProxy(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8080", "address to listen on")
	fl.StringVar(&f.upstream, "upstream", "", "URL of the app to proxy to, e.g. http://127.0.0.1:9000 (required)")
	fl.StringArrayVar(&f.conns, "limit-conn", nil, "a limit_conn, e.g. '$host=4' (repeatable)")
	fl.StringArrayVar(&f.reqs, "limit-req", nil, "a limit_req, e.g. '$binary_remote_addr=10r/s,burst=20,nodelay' (repeatable)")
	fl.IntVar(&f.status, "status", limit.DefaultStatus, "status for rejected requests, 400-599, for limits without status=")
	fl.BoolVar(&f.dryRun, "dry-run", false, "count what every limit would reject but let it through")
	fl.DurationVar(&f.readTimeout, "read-timeout", 60*time.Second, "nginx's proxy_read_timeout: no response headers within it answers 504; 0 means none")
	fl.DurationVar(&f.connTimeout, "connect-timeout", limiterproxy.DefaultConnectTimeout, "nginx's proxy_connect_timeout: no connection to the upstream within it answers 504")
	fl.DurationVar(&f.sendTimeout, "send-timeout", 60*time.Second, "nginx's proxy_send_timeout: a write of the request upstream stalled this long answers 504")
	fl.DurationVar(&f.bodyTimeout, "client-body-timeout", 60*time.Second, "nginx's client_body_timeout: a client silent this long while sending its body is cut off")
	fl.DurationVar(&f.headerTimeout, "client-header-timeout", 60*time.Second, "nginx's client_header_timeout: a client that sends no complete headers within it is cut off")
	fl.StringVar(&f.metrics, "metrics", "", "address to serve /metrics (Prometheus) and /debug/keys (busiest keys, JSON) on")
	fl.BoolVar(&f.printNginx, "print-nginx", false, "print the equivalent nginx.conf and exit")
	fl.IntVar(&f.maxConns, "max-conns", 4096, "most client connections served at once")
	fl.IntVar(&f.keepAlive, "upstream-keepalive", 0, "nginx's upstream keepalive N: idle upstream connections kept for the next requests (HTTP/1.1); 0 opens one per request, nginx's default")
	fl.StringVar(&f.server, "server", "h1", "the server: h1 (goroutines on Go's netpoller) or epoll (an event loop per CPU, Linux, needs --upstream-keepalive)")
	return cmd
}

// limitFlags reads the values of flag, --limit-conn or --limit-req, each
// [PATH:]SPEC, with parse. To each limit it applies --status, when the
// limit has no status= of its own, and --dry-run, through the fields that
// common returns, and hands it to add with its location's paths (nil for a
// limit of the server).
func limitFlags[S any](f proxyFlags, flag string, values []string, parse func(string) (S, error),
	common func(*S) (status *int, dryRun *bool), add func(paths []string, spec S)) error {
	for _, v := range values {
		paths, v, err := limiterproxy.SplitLocationFlag(v)
		if err != nil {
			return usagef("%s %v", flag, err)
		}
		spec, err := parse(v)
		if err != nil {
			return usagef("%s %v", flag, err)
		}
		status, dryRun := common(&spec)
		if *status == 0 {
			*status = f.status
		}
		*dryRun = *dryRun || f.dryRun
		add(paths, spec)
	}
	return nil
}

// addLimits adds conn and req to the location of cfg whose paths are
// paths, or to the server's limits for nil paths.
func addLimits(cfg *limit.Config, paths []string, conn []limit.ConnSpec, req []limit.ReqSpec) {
	if paths == nil {
		cfg.Conn = append(cfg.Conn, conn...)
		cfg.Req = append(cfg.Req, req...)
		return
	}
	limiterproxy.AddLocationLimits(cfg, paths, conn, req)
}

// proxyConfig turns the flags into the limits and the upstream URL.
func proxyConfig(f proxyFlags) (limit.Config, *url.URL, error) {
	var cfg limit.Config
	if f.status < limit.MinStatus || f.status > limit.MaxStatus {
		return cfg, nil, usagef("--status %d: want a status between %d and %d (e.g. 503 or 429)", f.status, limit.MinStatus, limit.MaxStatus)
	}
	err := limitFlags(f, "--limit-conn", f.conns, limiterproxy.ParseConnFlag,
		func(s *limit.ConnSpec) (*int, *bool) { return &s.Status, &s.DryRun },
		func(paths []string, s limit.ConnSpec) { addLimits(&cfg, paths, []limit.ConnSpec{s}, nil) })
	if err == nil {
		err = limitFlags(f, "--limit-req", f.reqs, limiterproxy.ParseReqFlag,
			func(s *limit.ReqSpec) (*int, *bool) { return &s.Status, &s.DryRun },
			func(paths []string, s limit.ReqSpec) { addLimits(&cfg, paths, nil, []limit.ReqSpec{s}) })
	}
	if err != nil {
		return cfg, nil, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, nil, usagef("--limit-conn, --limit-req: %v", err)
	}
	if f.connTimeout <= 0 {
		return cfg, nil, usagef("--connect-timeout %v: want a duration > 0, e.g. 60s (nginx cannot turn it off)", f.connTimeout)
	}
	if f.readTimeout < 0 {
		return cfg, nil, usagef("--read-timeout %v: want a duration ≥ 0 (e.g. 120s; 0 means none)", f.readTimeout)
	}
	for _, t := range []struct {
		flag string
		d    time.Duration
	}{{"--send-timeout", f.sendTimeout}, {"--client-body-timeout", f.bodyTimeout}, {"--client-header-timeout", f.headerTimeout}} {
		if t.d <= 0 {
			return cfg, nil, usagef("%s %v: want a duration above 0, e.g. 60s (nginx cannot turn it off)", t.flag, t.d)
		}
	}
	if f.keepAlive < 0 || f.keepAlive > limiterproxy.MaxUpstreamKeepAlive {
		return cfg, nil, usagef("--upstream-keepalive %d: want 0 (off, nginx's default) to %d, e.g. 32", f.keepAlive, limiterproxy.MaxUpstreamKeepAlive)
	}
	switch f.server {
	case "h1":
	case "epoll":
		if runtime.GOOS != "linux" {
			return cfg, nil, usagef("--server epoll: epoll is Linux's, this is %s; leave --server out for the default (h1)", runtime.GOOS)
		}
		if f.keepAlive == 0 {
			return cfg, nil, usagef("--server epoll needs --upstream-keepalive N (e.g. 32): its loops keep upstream connections as nginx's workers do")
		}
	default:
		return cfg, nil, usagef("--server %q: want h1 (the default) or epoll", f.server)
	}
	if f.maxConns < 1 {
		return cfg, nil, usagef("--max-conns %d: want at least 1", f.maxConns)
	}
	if f.upstream == "" {
		return cfg, nil, usagef("--upstream is required (e.g. --upstream http://127.0.0.1:9000)")
	}
	raw := f.upstream
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return cfg, nil, usagef("--upstream %q: want an http URL with a host, e.g. http://127.0.0.1:9000", f.upstream)
	}
	if _, _, err := net.SplitHostPort(f.listen); err != nil {
		return cfg, nil, usagef("--listen %q: want HOST:PORT, e.g. 127.0.0.1:8080", f.listen)
	}
	if f.metrics != "" {
		if _, _, err := net.SplitHostPort(f.metrics); err != nil {
			return cfg, nil, usagef("--metrics %q: want HOST:PORT, e.g. 127.0.0.1:9100", f.metrics)
		}
	}
	return cfg, u, nil
}

func runProxy(cmd *cobra.Command, f proxyFlags) error {
	defer tuneLiveGC()()
	cfg, upstream, err := proxyConfig(f)
	if err != nil {
		return err
	}
	policy, err := limit.NewPolicy(cfg)
	if err != nil {
		return asUsage(err)
	}
	if f.printNginx {
		return asUsage(limiterproxy.WriteNginx(cmd.OutOrStdout(), cfg, limiterproxy.NginxOptions{
			Listen: f.listen, Upstream: upstream.Host, ReadTimeout: f.readTimeout,
			ConnectTimeout: f.connTimeout,
			SendTimeout:    f.sendTimeout, ClientBodyTimeout: f.bodyTimeout, ClientHeaderTimeout: f.headerTimeout,
			UpstreamKeepAlive: f.keepAlive,
		}))
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	stderr := cmd.ErrOrStderr()
	metrics := limiterproxy.NewMetrics(policy)
	h := &limiterproxy.Handler{
		Policy: policy,
		Next: limiterproxy.NewProxy(upstream, limiterproxy.ProxyOptions{
			ReadTimeout: f.readTimeout, ConnectTimeout: f.connTimeout, SendTimeout: f.sendTimeout,
			UpstreamKeepAlive: f.keepAlive,
		}),
		Metrics: metrics,
	}
	sopts := limiterproxy.ServerOptions{MaxConns: f.maxConns, ReadHeaderTimeout: f.headerTimeout, ClientBodyTimeout: f.bodyTimeout,
		WatchDelay: limiterproxy.ProxyWatchDelay}
	var srv interface {
		Serve(net.Listener) error
		Shutdown(context.Context) error
		Close() error
	}
	listen := limiterproxy.Listen
	if f.server == "epoll" {
		// A loop per CPU, and a P beside them for the goroutines of the
		// connections handed off, so that the loops can wait out of the
		// scheduler's sight.
		loops := runtime.GOMAXPROCS(0)
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(loops + 1))
		es, err := limiterproxy.NewEpollServer(h, sopts, loops)
		if err != nil {
			return asUsage(err)
		}
		if !es.Lean() {
			fmt.Fprintf(stderr, "stampede proxy: --server epoll: the upstream %s is not an IP address, so every request is handed to the h1 server\n", upstream.Host)
		}
		srv, listen = es, limiterproxy.ListenReusePort
	} else {
		// The lean server: net/http's reads every connection on a
		// goroutine of its own while a request is served, and costs a
		// third of the proxy's CPU per request with upstream keep-alive;
		// the lean one watches only a request slower than the delay.
		srv = limiterproxy.NewLeanServer(h, sopts)
	}
	ln, err := listen(f.listen, sopts)
	if err != nil {
		return err
	}
	defer ln.Close()
	var mln net.Listener
	if f.metrics != "" {
		mln, err = limiterproxy.Listen(f.metrics, limiterproxy.ServerOptions{MaxConns: 64})
		if err != nil {
			return err
		}
		defer mln.Close()
	}
	fmt.Fprintf(stderr, "stampede proxy: listening on http://%s, upstream %s\n", ln.Addr(), upstream)
	if mln != nil {
		fmt.Fprintf(stderr, "stampede proxy: metrics on http://%s%s and http://%s%s\n",
			mln.Addr(), limiterproxy.MetricsPath, mln.Addr(), limiterproxy.KeysPath)
	}

	errc := make(chan error, 2)
	go func() { errc <- limiterproxy.Serve(ctx, srv, ln, shutdownGrace) }()
	n := 1
	if mln != nil {
		n++
		go func() {
			errc <- limiterproxy.Serve(ctx, limiterproxy.NewServer(metrics.Handler(), limiterproxy.ServerOptions{}), mln, time.Second)
		}()
	}
	var first error
	for range n {
		err := <-errc
		cancel() // one server stopped: stop the other
		if err != nil && !errors.Is(err, http.ErrServerClosed) && first == nil {
			first = err
		}
	}
	if first != nil {
		return first
	}
	if cmd.Context().Err() != nil {
		fmt.Fprintln(stderr, "stampede proxy: shut down")
	}
	return nil
}
