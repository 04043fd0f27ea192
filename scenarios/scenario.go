// Package scenarios reads, validates and overrides scenario files: the
// server, the limiting proxy in front of it, and the tenants and their load.
package scenarios

import (
	"time"

	"stampede/fakebackend"
	"stampede/limiterproxy"
)

// This file fixes the types the engines and reports are written against.

// Scenario is a validated scenario with every default filled in. Durations
// are model time.
type Scenario struct {
	Name        string
	Description string
	Duration    time.Duration // model time during which load is generated
	TimeScale   float64       // live engine plays the scenario this many times real time (0.01 = 100× faster)
	Seed        uint64
	Backend     Backend
	Proxy       Proxy
	Tenants     []TenantGroup
	SLO         []SLO
	Sweep       []Axis            // a sweep: block in the file (compare uses it when --sweep is absent)
	Settings    map[string]string // the --set overrides that made this scenario, PATH → VALUE
	File        string            // the file it was read from
}

// Backend is the fake gunicorn backend.
type Backend struct {
	Workers       int
	Backlog       int
	Timeout       time.Duration // worker timeout; 0 = none
	OnClientAbort fakebackend.AbortPolicy
	Routes        []Route
}

// PoolConfig returns the backend's pool configuration.
func (b Backend) PoolConfig() fakebackend.Config {
	return fakebackend.Config{Workers: b.Workers, Backlog: b.Backlog, Timeout: b.Timeout, OnClientAbort: b.OnClientAbort}
}

// Route is a path prefix with its service-time distribution.
type Route struct {
	Name    string
	Path    string
	Service fakebackend.Dist
}

// Proxy is the limiting proxy in front of the backend.
type Proxy struct {
	ReadTimeout time.Duration // nginx proxy_read_timeout; 0 = none
	Limits      limiterproxy.Config
}

// TenantGroup is Count tenants that share a load description.
type TenantGroup struct {
	Group string
	Count int
	Host  string // template: {i} is the tenant's number from 1
	Addr  string // client address template; "" means 127.0.0.1
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
	Stages      []Stage // piecewise-constant rate; overrides Rate
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
	Load  *Load
}
