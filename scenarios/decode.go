package scenarios

import (
	"fmt"
	"math"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"stampede/limit"
	"stampede/workerpool"
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

// decoder collects every mistake in one pass.
type decoder struct {
	file    string
	origin  map[*yaml.Node]string // nodes a --set put in → "PATH=VALUE"
	errs    []*Error
	aliases int

	routes []string // backend route names, nil when the routes were bad
	// routesOptional lets a backend leave out its routes (ParseBackend).
	routesOptional bool
	groups         []string // tenant group names, in order
	tenantOK       bool

	sweepValues [][]*yaml.Node // the node of each sweep value, per axis
}

func (d *decoder) fail(n *yaml.Node, path string, cause error, format string, args ...any) {
	if len(d.errs) >= maxErrors {
		return
	}
	e := &Error{File: d.file, Path: path, Msg: fmt.Sprintf(format, args...), Err: cause}
	if n != nil {
		if set, ok := d.origin[n]; ok {
			e.Set = set
		} else {
			e.Line, e.Col = n.Line, n.Column
		}
	}
	d.errs = append(d.errs, e)
}

// resolve follows aliases. It returns nil for nil, for a null value, and
// past maxAliases dereferences (a billion-laughs guard).
func (d *decoder) resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		d.aliases++
		if d.aliases > maxAliases {
			if d.aliases == maxAliases+1 {
				d.fail(n, "", nil, "too many aliases (over %d)", maxAliases)
			}
			return nil
		}
		n = n.Alias
	}
	if n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") || n.Kind == 0 {
		return nil
	}
	return n
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// describe names a node's value for an error message.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

// fields is a checked mapping: its keys, their nodes and resolved values.
type fields struct {
	d     *decoder
	node  *yaml.Node
	path  string
	order []string
	keys  map[string]*yaml.Node
	vals  map[string]*yaml.Node // nil for a null value
}

// mapping checks that n is a mapping with only known keys (any key when
// known is nil) and no key twice, applying YAML merge keys (<<). It reports
// and returns nil otherwise.
func (d *decoder) mapping(n *yaml.Node, path, example string, known []string) *fields {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, nil, "%s is not a mapping (want e.g. %s)", describe(n), example)
		return nil
	}
	f := &fields{d: d, node: n, path: path, keys: map[string]*yaml.Node{}, vals: map[string]*yaml.Node{}}
	d.collect(f, n, known, 0)
	return f
}

func (d *decoder) collect(f *fields, n *yaml.Node, known []string, nest int) {
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		k := d.resolve(kn)
		if k == nil || k.Kind != yaml.ScalarNode {
			d.fail(kn, f.path, nil, "a key must be a plain name, not %s", describeKey(k))
			continue
		}
		if k.Tag == "!!merge" {
			merges = append(merges, vn)
			continue
		}
		name := k.Value
		if prev, dup := f.keys[name]; dup {
			if nest == 0 {
				d.fail(kn, f.path, nil, "key %q appears twice (first on line %d)", name, prev.Line)
			}
			continue
		}
		if known != nil && !slices.Contains(known, name) {
			hint := suggest(name, known)
			if hint == "" {
				hint = " (known: " + strings.Join(known, ", ") + ")"
			}
			d.fail(kn, f.path, nil, "unknown key %q%s", name, hint)
			continue
		}
		f.order = append(f.order, name)
		f.keys[name] = kn
		f.vals[name] = d.resolve(vn)
	}
	// Merged keys come after the mapping's own, which win.
	for _, m := range merges {
		if nest >= maxMergeNest {
			d.fail(m, f.path, nil, "merges (<<) nested too deep")
			return
		}
		src := d.resolve(m)
		var list []*yaml.Node
		switch {
		case src == nil:
		case src.Kind == yaml.MappingNode:
			list = []*yaml.Node{src}
		case src.Kind == yaml.SequenceNode:
			for _, e := range src.Content {
				if e := d.resolve(e); e != nil {
					list = append(list, e)
				}
			}
		}
		for _, src := range list {
			if src.Kind != yaml.MappingNode {
				d.fail(src, f.path, nil, "<< merges a mapping, not %s", describe(src))
				continue
			}
			d.collect(f, src, known, nest+1)
		}
	}
}

func describeKey(n *yaml.Node) string {
	if n == nil {
		return "null"
	}
	return describe(n)
}

// get returns the value of key, or nil when it is absent or null.
func (f *fields) get(key string) *yaml.Node { return f.vals[key] }

// has reports whether key is present with a value that is not null.
func (f *fields) has(key string) bool { return f.vals[key] != nil }

// at returns the node to blame for key: its value, or the key when the value
// is null, or the mapping when the key is absent.
func (f *fields) at(key string) *yaml.Node {
	if v := f.vals[key]; v != nil {
		return v
	}
	if k := f.keys[key]; k != nil {
		return k
	}
	return f.node
}

func (f *fields) missing(key, example string) {
	f.d.fail(f.node, join(f.path, key), nil, "missing (want e.g. %s: %s)", key, example)
	if n := len(f.d.errs); n > 0 {
		f.d.errs[n-1].missing = true
	}
}

// scalar returns n's text, reporting lists and mappings.
func (d *decoder) scalar(n *yaml.Node, path, example string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, nil, "%s is not a single value (want e.g. %s)", describe(n), example)
		return "", false
	}
	return n.Value, true
}

func (f *fields) str(key, example string, dst *string) bool {
	n := f.get(key)
	if n == nil {
		return false
	}
	s, ok := f.d.scalar(n, join(f.path, key), example)
	if ok {
		*dst = s
	}
	return ok
}

// integer reads a whole number in [lo, hi].
func (d *decoder) integer(n *yaml.Node, path, example string, lo, hi int) (int, bool) {
	s, ok := d.scalar(n, path, example)
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	switch {
	case err != nil:
		d.fail(n, path, nil, "%q is not a whole number (want e.g. %s)", s, example)
		return 0, false
	case v < lo:
		d.fail(n, path, nil, "%d is below %d (want e.g. %s)", v, lo, example)
		return 0, false
	case v > hi:
		d.fail(n, path, nil, "%d is over %d (want e.g. %s)", v, hi, example)
		return 0, false
	}
	return v, true
}

func (f *fields) integer(key, example string, lo, hi int, dst *int) bool {
	n := f.get(key)
	if n == nil {
		return false
	}
	v, ok := f.d.integer(n, join(f.path, key), example, lo, hi)
	if ok {
		*dst = v
	}
	return ok
}

func (d *decoder) number(n *yaml.Node, path, example string) (float64, bool) {
	s, ok := d.scalar(n, path, example)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		d.fail(n, path, nil, "%q is not a number (want e.g. %s)", s, example)
		return 0, false
	}
	return v, true
}

func (f *fields) boolean(key string, dst *bool) bool {
	n := f.get(key)
	if n == nil {
		return false
	}
	path := join(f.path, key)
	s, ok := f.d.scalar(n, path, "true")
	if !ok {
		return false
	}
	switch strings.ToLower(s) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		f.d.fail(n, path, nil, "%q is not true or false", s)
		return false
	}
	return true
}

func (f *fields) duration(key, example string, dst *time.Duration) bool {
	return parsed(f, key, example, dst, parseDuration)
}

func (f *fields) rate(key, example string, dst *float64) bool {
	return parsed(f, key, example, dst, parseRate)
}

// parsed reads key with parse into dst; a value parse refuses is reported
// with its error and example.
func parsed[T any](f *fields, key, example string, dst *T, parse func(string) (T, error)) bool {
	n := f.get(key)
	if n == nil {
		return false
	}
	path := join(f.path, key)
	s, ok := f.d.scalar(n, path, example)
	if !ok {
		return false
	}
	v, err := parse(s)
	if err != nil {
		f.d.fail(n, path, nil, "%v (want e.g. %s)", err, example)
		return false
	}
	*dst = v
	return true
}

// name checks a group or route name: it appears in --set paths, result
// files and charts, so it is kept to letters, digits, - and _, and is not a
// bare number (which a --set path would read as a list index).
func (d *decoder) name(n *yaml.Node, path, s, example string) bool {
	ok := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			ok = false
		}
	}
	if _, err := strconv.Atoi(s); err == nil {
		ok = false
	}
	if !ok {
		d.fail(n, path, nil, "%q is not a name: use letters, digits, - and _, not only digits (want e.g. %s)", s, example)
	}
	return ok
}

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

func (d *decoder) backend(n *yaml.Node, b *Backend) {
	const path = "backend"
	f := d.mapping(n, path, "{workers: 8, routes: [...]}", backendKeys)
	b.Workers, b.Backlog = workerpool.DefaultWorkers, workerpool.DefaultBacklog
	b.Threads, b.Boot = 1, workerpool.DefaultBoot
	if f == nil {
		return
	}
	d.gunicorn(f, path, b)
	f.integer("workers", backendExamples["workers"], 1, math.MaxInt, &b.Workers)
	if f.integer("backlog", backendExamples["backlog"], 0, math.MaxInt, &b.Backlog) && b.Backlog == 0 {
		b.Backlog = -1 // workerpool.Config: negative means none may wait
	}
	f.duration("timeout", backendExamples["timeout"], &b.Timeout)
	var abort string
	if f.str("on_client_abort", "continue", &abort) {
		p, err := workerpool.ParseAbortPolicy(abort)
		if err != nil {
			d.fail(f.at("on_client_abort"), join(path, "on_client_abort"), err, "%q is not continue or cancel (want e.g. continue, as a gunicorn sync worker)", abort)
		}
		b.OnClientAbort = p
	}
	d.poolBounds(f, path, b)
	rn := f.get("routes")
	if rn == nil && d.routesOptional {
		return
	}
	if rn == nil {
		f.missing("routes", "[{name: page, path: /, service: 30ms}]")
		return
	}
	rpath := join(path, "routes")
	if rn.Kind != yaml.SequenceNode || len(rn.Content) == 0 {
		d.fail(rn, rpath, nil, "want a list of at least one route (want e.g. [{name: page, path: /, service: 30ms}])")
		return
	}
	ok := true
	names := map[string]bool{}
	paths := map[string]bool{}
	for i, en := range rn.Content {
		ep := index(rpath, i)
		en = d.resolve(en)
		if en == nil {
			d.fail(rn.Content[i], ep, nil, "an empty route (want e.g. {name: page, path: /, service: 30ms})")
			ok = false
			continue
		}
		r, rok := d.route(en, ep, names, paths)
		ok = ok && rok
		b.Routes = append(b.Routes, r)
	}
	if ok {
		for _, r := range b.Routes {
			d.routes = append(d.routes, r.Name)
		}
	}
}

func (d *decoder) route(n *yaml.Node, path string, names, paths map[string]bool) (Route, bool) {
	var r Route
	f := d.mapping(n, path, "{name: page, path: /app, service: 30ms}", routeKeys)
	if f == nil {
		return r, false
	}
	ok := true
	if f.str("name", "page", &r.Name) {
		if !d.name(f.at("name"), join(path, "name"), r.Name, "page") {
			ok = false
		} else if names[r.Name] {
			d.fail(f.at("name"), join(path, "name"), nil, "route %q is named twice", r.Name)
			ok = false
		}
		names[r.Name] = true
	} else {
		f.missing("name", "page")
		ok = false
	}
	if f.str("path", "/app", &r.Path) {
		switch {
		case !strings.HasPrefix(r.Path, "/") || strings.ContainsAny(r.Path, " ?#\t\r\n"):
			d.fail(f.at("path"), join(path, "path"), nil, "%q is not a URL path (want e.g. /app)", r.Path)
		case paths[r.Path]:
			d.fail(f.at("path"), join(path, "path"), nil, "path %q belongs to an earlier route", r.Path)
		}
		paths[r.Path] = true
	} else {
		f.missing("path", "/app")
	}
	var svc string
	if f.str("service", `"lognormal:median=30ms,p99=200ms"`, &svc) {
		dist, err := workerpool.ParseDist(svc)
		if err != nil {
			d.fail(f.at("service"), join(path, "service"), err, "%s", strings.TrimPrefix(err.Error(), workerpool.ErrDist.Error()+" "))
		}
		r.Service = dist
	} else {
		f.missing("service", `"lognormal:median=30ms,p99=200ms"`)
	}
	return r, ok
}

// isOff reports whether n is the scalar "off" (or false), which switches a
// limit off.
func isOff(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.ScalarNode && (n.Value == "off" || n.Value == "false")
}

// gunicorn reads the backend's fields that model gunicorn beyond its
// workers: threads, boot, max_requests and the kernel's backlog overflow.
func (d *decoder) gunicorn(f *fields, path string, b *Backend) {
	f.integer("threads", backendExamples["threads"], 1, math.MaxInt, &b.Threads)
	f.duration("boot", backendExamples["boot"], &b.Boot)
	f.integer("max_requests", backendExamples["max_requests"], 0, math.MaxInt, &b.MaxRequests)
	f.integer("max_requests_jitter", backendExamples["max_requests_jitter"], 0, math.MaxInt, &b.MaxRequestsJitter)
	var over string
	if f.str("backlog_overflow", "drop", &over) {
		o, err := workerpool.ParseOverflowPolicy(over)
		if err != nil || over == "" {
			d.fail(f.at("backlog_overflow"), join(path, "backlog_overflow"), err, "%q is not drop or reset (want e.g. drop, Linux's default tcp_abort_on_overflow=0)", over)
		}
		b.Overflow = o
	}
}

// backendExamples are a good value of each backend field the pool's
// Config bounds, keyed as workerpool.FieldError names them.
var backendExamples = map[string]string{
	"workers": "8", "threads": "4", "backlog": "2048", "timeout": "120s", "boot": "300ms",
	"max_requests": "5000", "max_requests_jitter": "500", "on_client_abort": "continue", "backlog_overflow": "drop",
}

// poolBounds holds the backend read so far against the pool's own bounds
// (workerpool.Config.Validate), blaming the field each one names.
func (d *decoder) poolBounds(f *fields, path string, b *Backend) {
	for _, fe := range workerpool.FieldErrors(b.PoolConfig().Validate()) {
		d.fail(f.at(fe.Field), join(path, fe.Field), fe, "%s (want e.g. %s)", fe.Msg, backendExamples[fe.Field])
	}
}

func (d *decoder) proxy(n *yaml.Node, p *Proxy) {
	const path = "proxy"
	f := d.mapping(n, path, "{read_timeout: 120s, limit_conn: {key: $host, per_key: 4}}", proxyKeys)
	if f == nil {
		return
	}
	f.duration("read_timeout", "120s", &p.ReadTimeout)
	if f.duration("connect_timeout", "60s", &p.ConnectTimeout) && p.ConnectTimeout <= 0 {
		d.fail(f.at("connect_timeout"), join(path, "connect_timeout"), nil, "%v: nginx cannot turn proxy_connect_timeout off (want e.g. 60s, its default)", p.ConnectTimeout)
	}
	for _, t := range []struct {
		key string
		dst *time.Duration
	}{{"send_timeout", &p.SendTimeout}, {"client_body_timeout", &p.ClientBodyTimeout}, {"client_header_timeout", &p.ClientHeaderTimeout}} {
		if f.duration(t.key, "60s", t.dst) && *t.dst <= 0 {
			f.d.fail(f.get(t.key), join(path, t.key), nil, "%v: want a duration above 0, e.g. 60s (nginx cannot turn it off)", *t.dst)
		}
	}
	f.upstreamKeepAlive(p)
	for _, en := range d.list(f.get("limit_conn"), join(path, "limit_conn"), "{key: $host, per_key: 4}") {
		if c, ok := d.connSpec(en.node, en.path); ok {
			p.Limits.Conn = append(p.Limits.Conn, c)
		}
	}
	for _, en := range d.list(f.get("limit_req"), join(path, "limit_req"), "{key: $binary_remote_addr, rate: 10r/s, burst: 20}") {
		if r, ok := d.reqSpec(en.node, en.path); ok {
			p.Limits.Req = append(p.Limits.Req, r)
		}
	}
	p.Limits.Locations = d.locations(f.get("locations"), join(path, "locations"))
}

const locExample = "{path: /api/method/stock_balance, limit_conn: {key: $host, per_key: 4}}"

// locations reads proxy.locations: a list of {path, limit_conn, limit_req},
// path one URI prefix or a list of them.
func (d *decoder) locations(n *yaml.Node, path string) []limit.Location {
	var out []limit.Location
	seen := map[string]string{}
	for _, en := range d.list(n, path, locExample) {
		f := d.mapping(en.node, en.path, locExample, locKeys)
		if f == nil {
			continue
		}
		var loc limit.Location
		pn := f.get("path")
		switch {
		case pn == nil:
			f.missing("path", "/api/method/stock_balance")
		case pn.Kind == yaml.SequenceNode:
			for i, e := range pn.Content {
				if v, ok := d.scalar(d.resolve(e), index(join(en.path, "path"), i), "/api/method/stock_balance"); ok {
					d.locPath(e, index(join(en.path, "path"), i), v, seen, &loc)
				}
			}
			if len(pn.Content) == 0 {
				d.fail(pn, join(en.path, "path"), nil, "an empty list of paths (want e.g. /api/method/stock_balance or [/api/a, /api/b])")
			}
		default:
			if v, ok := d.scalar(pn, join(en.path, "path"), "/api/method/stock_balance"); ok {
				d.locPath(pn, join(en.path, "path"), v, seen, &loc)
			}
		}
		for _, ce := range d.list(f.get("limit_conn"), join(en.path, "limit_conn"), "{key: $host, per_key: 4}") {
			if c, ok := d.connSpec(ce.node, ce.path); ok {
				loc.Conn = append(loc.Conn, c)
			}
		}
		for _, re := range d.list(f.get("limit_req"), join(en.path, "limit_req"), "{key: $binary_remote_addr, rate: 10r/s, burst: 20}") {
			if r, ok := d.reqSpec(re.node, re.path); ok {
				loc.Req = append(loc.Req, r)
			}
		}
		out = append(out, loc)
	}
	return out
}

func (d *decoder) locPath(n *yaml.Node, path, v string, seen map[string]string, loc *limit.Location) {
	if err := limit.CheckLocationPath(v); err != nil {
		d.fail(n, path, err, "%v", err)
		return
	}
	if prev, dup := seen[v]; dup {
		d.fail(n, path, nil, "%q is %s already (nginx refuses a duplicate location)", v, prev)
		return
	}
	seen[v] = path
	loc.Paths = append(loc.Paths, v)
}

type element struct {
	node *yaml.Node
	path string
}

// list reads "one mapping or a list of them"; off or null mean none.
func (d *decoder) list(n *yaml.Node, path, example string) []element {
	switch {
	case n == nil || isOff(n):
		return nil
	case n.Kind == yaml.MappingNode:
		return []element{{n, path}}
	case n.Kind == yaml.SequenceNode:
		var out []element
		for i, e := range n.Content {
			if r := d.resolve(e); r != nil {
				out = append(out, element{r, index(path, i)})
			} else {
				d.fail(e, index(path, i), nil, "an empty entry (want e.g. %s)", example)
			}
		}
		return out
	}
	d.fail(n, path, nil, "%s is not a mapping, a list of them, or off (want e.g. %s)", describe(n), example)
	return nil
}

func (d *decoder) limitCommon(f *fields, path string, key, zone *string, status *int, dryRun *bool) {
	*key = DefaultKey
	if f.str("key", "$host", key) {
		if err := checkKey(*key); err != nil {
			d.fail(f.at("key"), join(path, "key"), err, "%v", err)
		}
	}
	*zone = limit.DefaultZone
	if f.str("zone", "10m", zone) {
		if err := checkSize(*zone); err != nil {
			d.fail(f.at("zone"), join(path, "zone"), err, "%v", err)
		}
	}
	*status = limit.DefaultStatus
	f.integer("status", "503", limit.MinStatus, limit.MaxStatus, status)
	f.boolean("dry_run", dryRun)
}

func (d *decoder) connSpec(n *yaml.Node, path string) (limit.ConnSpec, bool) {
	var c limit.ConnSpec
	f := d.mapping(n, path, "{key: $host, per_key: 4}", connKeys)
	if f == nil {
		return c, false
	}
	d.limitCommon(f, path, &c.Key, &c.Zone, &c.Status, &c.DryRun)
	pk := f.get("per_key")
	switch {
	case pk == nil:
		f.missing("per_key", "4")
		return c, false
	case isOff(pk):
		return c, false
	}
	if v, ok := d.integer(pk, join(path, "per_key"), "4, or off to remove the limit", limit.MinPerKey, limit.MaxPerKey); ok {
		c.PerKey = v
	}
	d.limitErrs(f, path, c.Validate())
	return c, true
}

func (d *decoder) reqSpec(n *yaml.Node, path string) (limit.ReqSpec, bool) {
	var r limit.ReqSpec
	f := d.mapping(n, path, "{key: $binary_remote_addr, rate: 10r/s, burst: 20}", reqKeys)
	if f == nil {
		return r, false
	}
	d.limitCommon(f, path, &r.Key, &r.Zone, &r.Status, &r.DryRun)
	rn := f.get("rate")
	switch {
	case rn == nil:
		f.missing("rate", "10r/s")
		return r, false
	case isOff(rn):
		return r, false
	}
	if s, ok := d.scalar(rn, join(path, "rate"), "10r/s"); ok {
		if err := checkReqRate(s); err != nil {
			d.fail(rn, join(path, "rate"), err, "%v", err)
		}
		r.Rate = s
	}
	f.integer("burst", "20", 0, limit.MaxBurst, &r.Burst)
	f.integer("delay", "8", 0, limit.MaxBurst, &r.Delay)
	f.boolean("nodelay", &r.NoDelay)
	if r.NoDelay && f.has("delay") {
		d.fail(f.at("delay"), join(path, "delay"), nil, "delay and nodelay exclude each other (want delay: N for two-stage limiting, or nodelay: true)")
	}
	d.limitErrs(f, path, r.Validate())
	return r, true
}

// limitErrs reports what the limit's own Validate finds wrong with the
// limit at path, at its fields, but for fields already reported.
func (d *decoder) limitErrs(f *fields, path string, err error) {
	for _, fe := range limit.FieldErrors(err) {
		p := join(path, fe.Field)
		if !slices.ContainsFunc(d.errs, func(e *Error) bool { return e.Path == p }) {
			d.fail(f.at(fe.Field), p, fe.Err, "%v", fe.Err)
		}
	}
}

func (d *decoder) tenants(n *yaml.Node, duration time.Duration) []TenantGroup {
	const path = "tenants"
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		d.fail(n, path, nil, "want a list of at least one tenant group (want e.g. [{group: sites, count: 10, host: site{i}.example.com, load: {rate: 1/s}}])")
		return nil
	}
	var out []TenantGroup
	total := 0
	seen := map[string]int{}
	d.tenantOK = true
	for i, en := range n.Content {
		ep := index(path, i)
		r := d.resolve(en)
		if r == nil {
			d.fail(en, ep, nil, "an empty tenant group")
			d.tenantOK = false
			continue
		}
		g, gn, ok := d.tenant(r, ep, duration)
		if !ok {
			d.tenantOK = false
		}
		if g.Group != "" {
			if j, dup := seen[g.Group]; dup {
				d.fail(gn, join(ep, "group"), nil, "group %q is already tenants[%d]; group names must differ", g.Group, j)
				d.tenantOK = false
			}
			seen[g.Group] = i
			d.groups = append(d.groups, g.Group)
		}
		total += g.Count
		if total > maxTenants {
			d.fail(r, join(ep, "count"), nil, "more than %d tenants in all", maxTenants)
			return out
		}
		out = append(out, g)
	}
	return out
}

// tenant reads one tenant group; it returns the node of its group name.
func (d *decoder) tenant(n *yaml.Node, path string, duration time.Duration) (TenantGroup, *yaml.Node, bool) {
	g := TenantGroup{Count: 1, Addr: DefaultAddr}
	f := d.mapping(n, path, "{group: sites, count: 10, host: site{i}.example.com, load: {rate: 1/s}}", tenantKeys)
	if f == nil {
		return g, n, false
	}
	ok := true
	if f.str("group", "other-sites", &g.Group) {
		if g.Group == "all" {
			d.fail(f.at("group"), join(path, "group"), nil, `"all" is reserved for SLOs over every group (want e.g. other-sites)`)
			ok = false
		} else if !d.name(f.at("group"), join(path, "group"), g.Group, "other-sites") {
			ok = false
		}
	} else {
		f.missing("group", "other-sites")
		ok = false
	}
	f.integer("count", "249", 1, maxTenants, &g.Count)
	if f.has("hosts") {
		d.hostList(f, path, &g)
	} else if f.str("host", "site{i}.example.com", &g.Host) {
		d.hostTemplate(f.at("host"), join(path, "host"), g.Host, g.Count)
	} else {
		f.missing("host", "site{i}.example.com")
	}
	if f.str("addr", "127.0.0.9", &g.Addr) {
		d.addrTemplate(f.at("addr"), join(path, "addr"), g.Addr, g.Count)
	}
	if f.str("addrs", "127.1.0.0/24", &g.Addrs) {
		d.addrPool(f.at("addrs"), join(path, "addrs"), g.Addrs, g.Count)
	}
	if ln := f.get("load"); ln != nil {
		d.load(ln, join(path, "load"), duration, &g.Load)
	} else {
		f.missing("load", "{model: open, rate: 1/s}")
	}
	return g, f.at("group"), ok
}

func (d *decoder) hostTemplate(n *yaml.Node, path, src string, count int) {
	t, err := parseTemplate(src)
	if err != nil {
		d.fail(n, path, err, "%v", strings.TrimPrefix(err.Error(), errTemplate.Error()+": "))
		return
	}
	// Every host is the template with other digits, so checking the first
	// and the last checks them all.
	for _, i := range []int{1, count} {
		h := t.expand(i)
		if why := badHost(h); why != "" {
			d.fail(n, path, nil, "tenant %d's host %q %s (want e.g. site{i}.example.com)", i, h, why)
			return
		}
	}
}

// badHost says what is wrong with h as a Host header, or "".
func badHost(h string) string {
	if strings.TrimSpace(h) == "" {
		return "is empty"
	}
	if len(h) > 255 {
		return "is longer than 255 bytes"
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._:[]", r)) {
			return fmt.Sprintf("holds %q", r)
		}
	}
	return ""
}

func (d *decoder) addrTemplate(n *yaml.Node, path, src string, count int) {
	t, err := parseTemplate(src)
	if err != nil {
		d.fail(n, path, err, "%v", strings.TrimPrefix(err.Error(), errTemplate.Error()+": "))
		return
	}
	for i := 1; i <= count; i++ {
		a := t.expand(i)
		if why := badAddr(a); why != "" {
			d.fail(n, path, nil, "tenant %d's address %q %s (want e.g. 127.0.0.9, or 127.0.1.{i})", i, a, why)
			return
		}
		if !t.numbered() {
			return
		}
	}
}

// badAddr says why a is not a loopback client address, or "". Live runs
// bind their client sockets to it, so it must stay on loopback.
func badAddr(a string) string {
	ip, err := netip.ParseAddr(a)
	switch {
	case err != nil:
		return "is not an IP address"
	case ip.Zone() != "":
		return "has a zone"
	case ip.Is4() && ip.As4()[0] == 127:
		return ""
	case ip == netip.IPv6Loopback():
		return ""
	}
	return "is not on loopback (127.0.0.0/8 or ::1)"
}

func (d *decoder) load(n *yaml.Node, path string, duration time.Duration, l *Load) {
	f := d.mapping(n, path, "{model: open, rate: 1/s}", loadKeys)
	if f == nil {
		return
	}
	var model string
	if f.str("model", "open", &model) {
		switch model {
		case "open":
			l.Model = Open
		case "closed":
			l.Model = Closed
		case "trace":
			l.Model = Traced
		default:
			d.fail(f.at("model"), join(path, "model"), nil, "%q is not open, closed or trace (want e.g. open)", model)
			return
		}
	}
	other, otherName, thisName := closedKeys, "closed", "open"
	if l.Model == Closed {
		other, otherName, thisName = openKeys, "open", "closed"
	}
	if l.Model == Traced {
		other, otherName, thisName = traceExcluded, "open or closed", "trace"
	}
	for _, k := range other {
		if _, ok := f.keys[k]; ok {
			d.fail(f.keys[k], path, nil, "%s is for the %s model and this load is %s (want model: %s, or leave out %s)", k, otherName, thisName, otherName, k)
		}
	}
	switch l.Model {
	case Open:
		d.openLoad(f, path, l)
	case Closed:
		d.closedLoad(f, path, l)
	case Traced:
		f.integer("max_in_flight", "100", 0, math.MaxInt32, &l.MaxInFlight)
	}
	f.duration("start", "1m", &l.Start)
	f.duration("stop", "9m", &l.Stop)
	if duration > 0 {
		if l.Start >= duration {
			d.fail(f.at("start"), join(path, "start"), nil, "%s is not before the end of the run at %s", formatDuration(l.Start), formatDuration(duration))
		}
		if l.Stop > duration {
			d.fail(f.at("stop"), join(path, "stop"), nil, "%s is after the end of the run at %s (want e.g. %s, or leave it out)", formatDuration(l.Stop), formatDuration(duration), formatDuration(duration))
		}
	}
	if l.Stop != 0 && l.Stop <= l.Start {
		d.fail(f.at("stop"), join(path, "stop"), nil, "%s is not after start %s", formatDuration(l.Stop), formatDuration(l.Start))
	}
	f.duration("client_timeout", "2m", &l.ClientTimeout)
	d.mix(f, path, l)
}

func (d *decoder) openLoad(f *fields, path string, l *Load) {
	var arr string
	if f.str("arrivals", "poisson", &arr) {
		switch arr {
		case "poisson":
			l.Arrivals = Poisson
		case "constant":
			l.Arrivals = Constant
		default:
			d.fail(f.at("arrivals"), join(path, "arrivals"), nil, "%q is not poisson or constant (want e.g. poisson)", arr)
		}
	}
	hasRate := f.rate("rate", "5/s", &l.Rate)
	if sn := f.get("stages"); sn != nil {
		if f.has("rate") {
			d.fail(f.keys["rate"], path, nil, "rate and stages exclude each other (want stages: [{duration: 1m, rate: 5/s}, ...] alone)")
		}
		d.stages(sn, join(path, "stages"), l)
	} else if !f.has("rate") {
		f.missing("rate", "5/s")
	} else if hasRate && l.Rate == 0 {
		d.fail(f.at("rate"), join(path, "rate"), nil, "an open load needs a rate above 0 (want e.g. 5/s)")
	}
	f.integer("max_in_flight", "100", 0, math.MaxInt32, &l.MaxInFlight)
}

func (d *decoder) stages(n *yaml.Node, path string, l *Load) {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		d.fail(n, path, nil, "want a list of at least one stage (want e.g. [{duration: 1m, rate: 5/s}])")
		return
	}
	total := 0.0
	errs := len(d.errs)
	for i, en := range n.Content {
		ep := index(path, i)
		r := d.resolve(en)
		if r == nil {
			d.fail(en, ep, nil, "an empty stage (want e.g. {duration: 1m, rate: 5/s})")
			continue
		}
		f := d.mapping(r, ep, "{duration: 1m, rate: 5/s}", stageKeys)
		if f == nil {
			continue
		}
		var st Stage
		if !f.duration("duration", "1m", &st.Duration) {
			if !f.has("duration") {
				f.missing("duration", "1m")
			}
		} else if st.Duration == 0 {
			d.fail(f.at("duration"), join(ep, "duration"), nil, "must be above 0 (want e.g. 1m)")
		}
		if !f.rate("rate", "5/s", &st.Rate) && !f.has("rate") {
			f.missing("rate", "5/s")
		}
		total += st.Rate
		l.Stages = append(l.Stages, st)
	}
	if total == 0 && len(d.errs) == errs {
		d.fail(n, path, nil, "every stage has rate 0; an open load needs a rate above 0 somewhere (want e.g. rate: 5/s)")
	}
}

func (d *decoder) closedLoad(f *fields, path string, l *Load) {
	if !f.integer("users", "8", 1, maxTenants, &l.Users) && !f.has("users") {
		f.missing("users", "8")
	}
	f.duration("think", "5s", &l.Think)
	f.integer("iterations", "1", 0, math.MaxInt32, &l.Iterations)
	var ot string
	if f.str("on_timeout", "retry", &ot) {
		switch ot {
		case "retry":
			l.OnTimeout = Retry
		case "give_up":
			l.OnTimeout = GiveUp
		default:
			d.fail(f.at("on_timeout"), join(path, "on_timeout"), nil, "%q is not retry or give_up (want e.g. retry, a browser tab refreshed after a timeout)", ot)
		}
	}
}

// mix reads a load's routes: route name → weight.
func (d *decoder) mix(f *fields, path string, l *Load) {
	rn := f.get("routes")
	path = join(path, "routes")
	if rn == nil {
		switch {
		case d.routes == nil:
		case len(d.routes) == 1:
			l.Routes = []WeightedRoute{{Route: 0, Weight: 1}}
		default:
			d.fail(f.at("routes"), path, nil, "missing: the backend has several routes (want e.g. routes: {%s: 1})", d.routes[0])
		}
		return
	}
	example := "{page: 1}"
	if len(d.routes) > 0 {
		example = "{" + d.routes[0] + ": 1}"
	}
	rf := d.mapping(rn, path, example, nil)
	if rf == nil {
		return
	}
	if len(rf.order) == 0 {
		d.fail(rn, path, nil, "no routes (want e.g. %s)", example)
	}
	for _, name := range rf.order {
		kn, v := rf.keys[name], rf.vals[name]
		if v == nil {
			d.fail(kn, join(path, name), nil, "no weight (want e.g. %s: 1)", name)
			continue
		}
		w, ok := d.number(v, join(path, name), "1")
		if !ok {
			continue
		}
		if w <= 0 {
			d.fail(v, join(path, name), nil, "weight %s is not above 0 (want e.g. 1)", v.Value)
			continue
		}
		if d.routes == nil {
			continue
		}
		i := slices.Index(d.routes, name)
		if i < 0 {
			d.fail(kn, path, nil, "no route %q in backend.routes%s (known: %s)", name, suggest(name, d.routes), strings.Join(d.routes, ", "))
			continue
		}
		l.Routes = append(l.Routes, WeightedRoute{Route: i, Weight: w})
	}
}

// slo reads the objectives, group → list of "METRIC OP VALUE". "all" gives
// the objectives to every group. They come out in the order of the groups.
func (d *decoder) slo(n *yaml.Node) []SLO {
	const path = "slo"
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, nil, "%s is not a mapping of group to objectives (want e.g. {other-sites: [\"p99 < 1s\", \"ok_rate > 99%%\"]})", describe(n))
		return nil
	}
	f := d.mapping(n, path, `{other-sites: ["p99 < 1s"]}`, nil)
	if f == nil {
		return nil
	}
	var out []SLO
	for _, group := range f.order {
		kn, v := f.keys[group], f.vals[group]
		gp := join(path, group)
		if d.tenantOK && group != "all" && !slices.Contains(d.groups, group) {
			d.fail(kn, path, nil, "no tenant group %q%s (known: %s, or all)", group, suggest(group, d.groups), strings.Join(d.groups, ", "))
			continue
		}
		if v == nil {
			continue
		}
		var items []element
		switch v.Kind {
		case yaml.ScalarNode:
			items = []element{{v, gp}}
		case yaml.SequenceNode:
			for i, e := range v.Content {
				if r := d.resolve(e); r != nil {
					items = append(items, element{r, index(gp, i)})
				}
			}
		default:
			d.fail(v, gp, nil, "%s is not a list of objectives (want e.g. [\"p99 < 1s\", \"ok_rate > 99%%\"])", describe(v))
			continue
		}
		for _, it := range items {
			text, ok := d.scalar(it.node, it.path, `"p99 < 1s"`)
			if !ok {
				continue
			}
			o, err := parseSLO(text)
			if err != nil {
				d.fail(it.node, it.path, err, "%v (want e.g. \"p99 < 1s\" or \"ok_rate > 99%%\")", err)
				continue
			}
			targets := []string{group}
			if group == "all" {
				targets = d.groups
			}
			for _, g := range targets {
				o.Group = g
				out = append(out, o)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b SLO) int {
		return slices.Index(d.groups, a.Group) - slices.Index(d.groups, b.Group)
	})
	return out
}

func (d *decoder) sweep(n *yaml.Node) []Axis {
	const path = "sweep"
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, nil, "%s is not a list of axes (want e.g. [{path: proxy.limit_conn.per_key, values: [off, 2, 4]}])", describe(n))
		return nil
	}
	if len(n.Content) > maxAxes {
		d.fail(n, path, nil, "%d axes; at most %d", len(n.Content), maxAxes)
		return nil
	}
	var out []Axis
	for i, en := range n.Content {
		ep := index(path, i)
		r := d.resolve(en)
		if r == nil {
			d.fail(en, ep, nil, "an empty axis (want e.g. {path: proxy.limit_conn.per_key, values: [off, 2, 4]})")
			continue
		}
		f := d.mapping(r, ep, "{path: proxy.limit_conn.per_key, values: [off, 2, 4]}", axisKeys)
		if f == nil {
			continue
		}
		var a Axis
		var nodes []*yaml.Node
		if f.str("path", "proxy.limit_conn.per_key", &a.Path) {
			if err := checkSetPath(a.Path); err != nil {
				d.fail(f.at("path"), join(ep, "path"), err, "%v (want e.g. proxy.limit_conn.per_key)", err)
			}
			for _, b := range out {
				if b.Path == a.Path {
					d.fail(f.at("path"), join(ep, "path"), nil, "%q is swept twice", a.Path)
				}
			}
		} else {
			f.missing("path", "proxy.limit_conn.per_key")
		}
		vn := f.get("values")
		switch {
		case vn == nil:
			f.missing("values", "[off, 2, 4]")
		case vn.Kind != yaml.SequenceNode || len(vn.Content) == 0:
			d.fail(vn, join(ep, "values"), nil, "want a list of at least one value (want e.g. [off, 2, 4])")
		case len(vn.Content) > maxAxisSize:
			d.fail(vn, join(ep, "values"), nil, "%d values; at most %d", len(vn.Content), maxAxisSize)
		default:
			for j, e := range vn.Content {
				r := d.resolve(e)
				if r == nil {
					d.fail(e, index(join(ep, "values"), j), nil, "an empty value")
					continue
				}
				if v, ok := d.scalar(r, index(join(ep, "values"), j), "4"); ok {
					if slices.Contains(a.Values, v) {
						d.fail(r, index(join(ep, "values"), j), nil, "%s is already a value of this axis: each point is played once", v)
						continue
					}
					a.Values = append(a.Values, v)
					nodes = append(nodes, r)
				}
			}
		}
		out = append(out, a)
		d.sweepValues = append(d.sweepValues, nodes)
	}
	return out
}
