package scenarios

import (
	"net/netip"
	"slices"
	"strconv"
	"time"

	"stampede/limit"
	"stampede/workerpool"
)

// This file holds the types the engines and reports are written against.

// Scenario is a validated scenario with every default filled in. Durations
// are model time.
type Scenario struct {
	Name        string
	Description string
	Duration    time.Duration // model time during which load is generated
	TimeScale   float64       // live engine plays the scenario this many times real time (0.01 = 100× faster)
	// TimeScaleAuto (time_scale: auto, the default when the file leaves
	// it out) lets the live engine choose TimeScale from a calibration on
	// the machine; TimeScale is then 1 for everything else (a --target run,
	// the backend command, nginx-config). The sim ignores both.
	TimeScaleAuto bool
	Seed          uint64
	Backend       Backend
	Proxy         Proxy
	Tenants       []TenantGroup
	SLO           []SLO
	Sweep         []Axis            // a sweep: block in the file (compare uses it when --sweep is absent)
	Recommend     Recommend         // what compare's recommendation optimises (the recommend: block)
	Settings      map[string]string // the --set overrides that made this scenario, PATH → VALUE
	File          string            // the file it was read from
	TraceFile     string            // the trace: companion file as written, relative to File's directory; "" none
	trace         *Trace            // read from TraceFile

	src  []byte   // the file's contents, for With
	sets []string // the overrides applied, in order, for With

	part  []Tenant // a shard's tenants (Shard); nil for a whole run
	shard ShardOf
}

// Backend is the fake gunicorn backend.
type Backend struct {
	Workers       int
	Backlog       int           // as workerpool.Config: negative means none may wait (backlog: 0 in the file)
	Timeout       time.Duration // worker timeout; 0 = none
	OnClientAbort workerpool.AbortPolicy
	Routes        []Route

	Threads           int                       // per worker; 1 is gunicorn's sync worker, more its gthread one
	Boot              time.Duration             // a replacement worker is ready this long after one exits
	MaxRequests       int                       // recycle a worker after this many requests; 0 = never
	MaxRequestsJitter int                       // plus a draw from 0 to this, per worker
	Overflow          workerpool.OverflowPolicy // backlog_overflow: what a connection over the backlog meets
}

// PoolConfig returns the backend's pool configuration; its Seed is left
// zero for the caller to set from the scenario's.
func (b Backend) PoolConfig() workerpool.Config {
	return workerpool.Config{Workers: b.Workers, Backlog: b.Backlog, Timeout: b.Timeout, OnClientAbort: b.OnClientAbort,
		Threads: b.Threads, Boot: b.Boot, MaxRequests: b.MaxRequests, MaxRequestsJitter: b.MaxRequestsJitter, Overflow: b.Overflow}
}

// PoolConfig returns the backend pool's configuration seeded by the
// scenario's seed, so that both engines draw the same arbiter tick phase
// and max_requests jitter.
func (s *Scenario) PoolConfig() workerpool.Config {
	cfg := s.Backend.PoolConfig()
	cfg.Seed = s.Seed
	return cfg
}

// Route is a path prefix with its service-time distribution (see
// workerpool.Route).
type Route = workerpool.Route

// Proxy is the limiting proxy in front of the backend.
type Proxy struct {
	ReadTimeout    time.Duration // nginx proxy_read_timeout; 0 = none
	ConnectTimeout time.Duration // nginx proxy_connect_timeout; the file cannot say 0, the sim reads 0 as none
	Limits         limit.Config
	// SendTimeout, ClientBodyTimeout and ClientHeaderTimeout are nginx's
	// proxy_send_timeout, client_body_timeout and client_header_timeout;
	// a decoded scenario has each above 0 (default 60s).
	SendTimeout, ClientBodyTimeout, ClientHeaderTimeout time.Duration
	// UpstreamKeepAlive is nginx's `upstream { keepalive N; }`: the idle
	// upstream connections kept; 0 (the default) opens one per request.
	UpstreamKeepAlive int
}

// TenantGroup is Count tenants that share a load description.
type TenantGroup struct {
	Group string
	Count int
	Host  string   // template: {i} is the tenant's number from 1, {i:03} zero-padded
	Hosts []string // when set, tenant i's host is Hosts[i-1] and Host is unused
	Addr  string   // client address template, on loopback; "" means 127.0.0.1
	Addrs string   // a pool of client addresses per tenant, a CIDR template (127.1.{i}.0/24); "" for none: see Tenant.VisitorAddr
	Load  Load
}

// Model is a load model.
type Model uint8

const (
	Open   Model = iota // arrivals on a schedule, whatever the server does
	Closed              // users that wait for an answer before the next request
)

// Arrivals is how an open model spaces its requests.
type Arrivals uint8

const (
	Poisson Arrivals = iota
	Constant
)

// Stage is one step of an open model's rate: Rate per second for Duration.
type Stage struct {
	Duration time.Duration
	Rate     float64 // requests per second
}

// OnTimeout is what a closed-model user does after a client timeout.
type OnTimeout uint8

const (
	Retry  OnTimeout = iota // send again, like a refreshed browser tab
	GiveUp                  // stop this user
)

// Load is one tenant's load.
type Load struct {
	Model Model

	// Open model.
	Arrivals    Arrivals
	Rate        float64 // requests per second when Stages is empty
	Stages      []Stage // piecewise-constant rate from Start, one after the other; none after the last; overrides Rate
	MaxInFlight int     // per-tenant cap on requests in flight; an arrival over it is dropped. 0 = the engine's default

	// Closed model.
	Users      int
	Think      time.Duration
	Iterations int // per user; 0 = until Stop
	OnTimeout  OnTimeout

	// Both.
	Start         time.Duration // offset from the start of the run
	Stop          time.Duration // offset at which the tenant stops sending; 0 = the scenario's Duration
	Routes        []WeightedRoute
	ClientTimeout time.Duration // 0 = none
}

// WeightedRoute is a route (by index into Backend.Routes) and its weight in
// a tenant's mix.
type WeightedRoute struct {
	Route  int
	Weight float64
}

// SLO is one objective for a group: Metric Op Threshold, e.g. p99 < 1s.
type SLO struct {
	Group     string
	Text      string  // as written, "p99 < 1s"
	Metric    string  // p50 p90 p95 p99 p999 max mean ok_rate rejected_rate error_rate timeout_rate
	Op        string  // < <= > >=
	Threshold float64 // ms for latencies, a fraction 0..1 for rates
}

// Axis is one sweep axis: a --set PATH and its values.
type Axis struct {
	Path   string
	Values []string
}

// Tenant is one expanded tenant.
type Tenant struct {
	Index int    // position in Scenario.Expand()
	Name  string // group name for a group of one, else group-N
	Group string
	Host  string
	Addr  string // client address, e.g. 127.0.0.1
	// Addrs is the tenant's pool of client addresses, one per visitor
	// (VisitorAddr); the zero Prefix means none, every request from Addr.
	Addrs netip.Prefix
	Load  *Load
	Trace []TraceArrival // model trace: this tenant's arrivals, in time order
}

// Expand returns every tenant, group by group in file order, numbered from
// 1 within a group: a group of one is named for the group, a larger group's
// tenants group-1, group-2, …, with {i} in Host and Addr filled in. Each
// Tenant's Load points into s.Tenants. A shard (Scenario.Shard) expands to
// its own tenants only, with the Index each has in the whole run.
func (s *Scenario) Expand() []Tenant {
	if s.part != nil {
		return slices.Clone(s.part)
	}
	n := 0
	for _, g := range s.Tenants {
		n += max(g.Count, 1)
	}
	out := make([]Tenant, 0, n)
	for gi := range s.Tenants {
		g := &s.Tenants[gi]
		host := mustTemplate(g.Host)
		addr := mustTemplate(g.Addr)
		pool := mustTemplate(g.Addrs)
		count := max(g.Count, 1)
		for i := 1; i <= count; i++ {
			t := Tenant{Index: len(out), Name: g.Group, Group: g.Group, Host: host.expand(i), Addr: addr.expand(i), Load: &g.Load}
			if len(g.Hosts) >= i {
				t.Host = g.Hosts[i-1]
			}
			if g.Load.Model == Traced {
				t.Trace = s.TraceOf(g.Group, i)
			}
			if count > 1 {
				t.Name = g.Group + "-" + strconv.Itoa(i)
			}
			if t.Addr == "" {
				t.Addr = DefaultAddr
			}
			if g.Addrs != "" {
				t.Addrs, _ = netip.ParsePrefix(pool.expand(i)) // checked when the file was read
				t.Addrs = t.Addrs.Masked()
			}
			out = append(out, t)
		}
	}
	return out
}

// mustTemplate compiles a checked template; one that does not compile (a
// Scenario built by hand) is taken literally.
func mustTemplate(s string) template {
	t, err := parseTemplate(s)
	if err != nil {
		return template{src: s, parts: []tplPart{{lit: s}}}
	}
	return t
}

// TenantCount returns the number of tenants Expand returns.
func (s *Scenario) TenantCount() int {
	if s.part != nil {
		return len(s.part)
	}
	n := 0
	for _, g := range s.Tenants {
		n += max(g.Count, 1)
	}
	return n
}

// Group returns the tenant group named name, or nil.
func (s *Scenario) Group(name string) *TenantGroup {
	i := slices.IndexFunc(s.Tenants, func(g TenantGroup) bool { return g.Group == name })
	if i < 0 {
		return nil
	}
	return &s.Tenants[i]
}

// Route returns the index in Backend.Routes of the route named name, or -1.
func (b Backend) Route(name string) int {
	return slices.IndexFunc(b.Routes, func(r Route) bool { return r.Name == name })
}

// End returns when the load stops sending, as an offset from the start of
// the run: Stop, or duration when Stop is zero.
func (l *Load) End(duration time.Duration) time.Duration {
	if l.Stop > 0 {
		return l.Stop
	}
	return duration
}

// String returns the model as the file writes it.
func (m Model) String() string {
	if m == Traced {
		return "trace"
	}
	if m == Closed {
		return "closed"
	}
	return "open"
}

// String returns the arrivals as the file writes them.
func (a Arrivals) String() string {
	if a == Constant {
		return "constant"
	}
	return "poisson"
}

// String returns the policy as the file writes it.
func (o OnTimeout) String() string {
	if o == GiveUp {
		return "give_up"
	}
	return "retry"
}
