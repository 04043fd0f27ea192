package scenarios

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"stampede/limit"
)

// This file turns a YAML node tree into a Scenario, checking every field and
// filling in defaults. It walks yaml.Node rather than unmarshalling into
// structs so that every mistake keeps its line and column.

// Defaults the file may leave out.
const (
	// DefaultReadTimeout is nginx's default proxy_read_timeout.
	DefaultReadTimeout = 60 * time.Second
	// DefaultNginxTimeout is nginx's default proxy_send_timeout,
	// client_body_timeout and client_header_timeout.
	DefaultNginxTimeout = 60 * time.Second
	// DefaultKey is the limit key when a limit names none: per site, as in
	// the incident that started stampede.
	DefaultKey = "$host"
	// DefaultAddr is a tenant's client address when the file names none.
	DefaultAddr = "127.0.0.1"
)

// Bounds that keep a scenario's memory and work bounded.
const (
	maxTenants   = 100_000 // expanded tenants in one scenario
	maxAxes      = 3
	maxAxisSize  = 50
	maxAliases   = 10_000 // alias dereferences while decoding one file
	maxErrors    = 100
	maxMergeNest = 8
)

// Keys each mapping of the file may hold.
var (
	topKeys     = []string{"name", "description", "duration", "time_scale", "seed", "backend", "proxy", "tenants", "slo", "sweep", "trace", "recommend"}
	backendKeys = []string{"workers", "backlog", "timeout", "on_client_abort", "routes", "threads", "boot", "max_requests", "max_requests_jitter", "backlog_overflow"}
	routeKeys   = []string{"name", "path", "service"}
	proxyKeys   = []string{"read_timeout", "limit_conn", "limit_req", "connect_timeout", "locations", "send_timeout", "client_body_timeout", "client_header_timeout", "upstream_keepalive"}
	locKeys     = []string{"path", "limit_conn", "limit_req"}
	connKeys    = []string{"key", "per_key", "zone", "status", "dry_run"}
	reqKeys     = []string{"key", "rate", "burst", "delay", "nodelay", "zone", "status", "dry_run"}
	tenantKeys  = []string{"group", "count", "host", "hosts", "addr", "addrs", "load"}
	openKeys    = []string{"arrivals", "rate", "stages", "max_in_flight"}
	closedKeys  = []string{"users", "think", "iterations", "on_timeout"}
	bothKeys    = []string{"model", "start", "stop", "routes", "client_timeout"}
	loadKeys    = slices.Concat(bothKeys, openKeys, closedKeys)
	stageKeys   = []string{"duration", "rate"}
	axisKeys    = []string{"path", "values"}
)

// decode turns the document's top mapping into a scenario.
func (d *decoder) decode(root *yaml.Node) *Scenario {
	s := &Scenario{TimeScale: 1, Seed: 1, File: d.file, Settings: map[string]string{}}
	top := d.mapping(root, "", "name: stock-balance", topKeys)
	if top == nil {
		return s
	}
	if !top.str("name", "stock-balance", &s.Name) {
		base := filepath.Base(d.file)
		s.Name = strings.TrimSuffix(base, filepath.Ext(base))
	} else {
		d.scenarioName(top.at("name"), s.Name)
	}
	top.str("description", "one site opens 8 tabs of a slow report", &s.Description)
	if top.duration("duration", "10m", &s.Duration) && s.Duration == 0 {
		d.fail(top.at("duration"), "duration", nil, "must be above 0 (want e.g. 10m)")
	} else if !top.has("duration") {
		top.missing("duration", "10m")
	}
	s.TimeScaleAuto = true
	if n := top.get("time_scale"); n != nil && n.Kind == yaml.ScalarNode && strings.TrimSpace(n.Value) == "auto" {
		// TimeScale stays 1: what a target, the backend command and
		// nginx-config use, having no calibration of their own.
	} else if n != nil {
		s.TimeScaleAuto = false
		if v, ok := d.number(n, "time_scale", "0.01 or auto"); ok {
			if v <= 0 || v > 1 {
				d.fail(n, "time_scale", nil, "%s is not in (0, 1]: the live engine plays time_scale × real time, so 0.01 is 100× faster (want e.g. 0.01, or auto)", n.Value)
			} else {
				s.TimeScale = v
			}
		}
	}
	if n := top.get("seed"); n != nil {
		if str, ok := d.scalar(n, "seed", "1"); ok {
			v, err := strconv.ParseUint(strings.TrimSpace(str), 10, 64)
			if err != nil {
				d.fail(n, "seed", nil, "%q is not a whole number from 0 (want e.g. 1)", str)
			} else {
				s.Seed = v
			}
		}
	}
	if n := top.get("backend"); n != nil {
		d.backend(n, &s.Backend)
	} else {
		top.missing("backend", "{workers: 8, routes: [{name: page, path: /, service: 30ms}]}")
	}
	s.Proxy.ReadTimeout = DefaultReadTimeout
	s.Proxy.ConnectTimeout = limit.DefaultConnectTimeout
	s.Proxy.SendTimeout, s.Proxy.ClientBodyTimeout, s.Proxy.ClientHeaderTimeout = DefaultNginxTimeout, DefaultNginxTimeout, DefaultNginxTimeout
	if n := top.get("proxy"); n != nil {
		d.proxy(n, &s.Proxy)
	}
	if n := top.get("tenants"); n != nil {
		s.Tenants = d.tenants(n, s.Duration)
	} else {
		top.missing("tenants", "[{group: sites, count: 10, host: site{i}.example.com, load: {rate: 1/s}}]")
	}
	if n := top.get("slo"); n != nil {
		s.SLO = d.slo(n)
	}
	if n := top.get("sweep"); n != nil {
		s.Sweep = d.sweep(n)
	}
	top.str("trace", "incident.trace", &s.TraceFile)
	if n := top.get("recommend"); n != nil {
		var groups []string
		for _, tg := range s.Tenants {
			groups = append(groups, tg.Group)
		}
		s.Recommend = d.recommend(n, groups)
	}
	if len(d.errs) == 0 {
		d.bounds(root, s)
	}
	return s
}

func (d *decoder) scenarioName(n *yaml.Node, s string) {
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\\\x00") {
		d.fail(n, "name", nil, "%q cannot name the output directory (want e.g. stock-balance)", s)
	}
}
