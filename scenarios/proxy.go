package scenarios

import (
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"stampede/limit"
)

// This file reads the proxy section: timeouts, limit_conn, limit_req and
// locations.

// isOff reports whether n is the scalar "off" (or false), which switches a
// limit off.
func isOff(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.ScalarNode && (n.Value == "off" || n.Value == "false")
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
	if first(d, n, path, seen, v, path, "%q is %s already (nginx refuses a duplicate location)") {
		loc.Paths = append(loc.Paths, v)
	}
}

// list reads "one mapping or a list of them"; off or null mean none.
func (d *decoder) list(n *yaml.Node, path, example string) []element {
	switch {
	case n == nil || isOff(n):
		return nil
	case n.Kind == yaml.MappingNode:
		return []element{{node: n, path: path}}
	case n.Kind == yaml.SequenceNode:
		var out []element
		for i, e := range n.Content {
			if r := d.resolve(e); r != nil {
				out = append(out, element{node: r, path: index(path, i), i: i})
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

// limitSpec opens a limit's mapping and reads what limit_conn and
// limit_req share into key, zone, status and dryRun. Then, unless the
// mapping is bad, the limit's own required field need is missing, or need
// is off (the limit is removed), it has own read the limit's other fields,
// given need's node, and reports what the error own returns, the limit's
// Validate, finds; it reports whether it got that far.
func (d *decoder) limitSpec(n *yaml.Node, path, example string, known []string, need, needExample string,
	key, zone *string, status *int, dryRun *bool, own func(f *fields, need *yaml.Node) error) bool {
	f := d.mapping(n, path, example, known)
	if f == nil {
		return false
	}
	d.limitCommon(f, path, key, zone, status, dryRun)
	v := f.get(need)
	switch {
	case v == nil:
		f.missing(need, needExample)
		return false
	case isOff(v):
		return false
	}
	d.limitErrs(f, path, own(f, v))
	return true
}

func (d *decoder) connSpec(n *yaml.Node, path string) (c limit.ConnSpec, ok bool) {
	ok = d.limitSpec(n, path, "{key: $host, per_key: 4}", connKeys, "per_key", "4", &c.Key, &c.Zone, &c.Status, &c.DryRun,
		func(_ *fields, pk *yaml.Node) error {
			if v, ok := d.integer(pk, join(path, "per_key"), "4, or off to remove the limit", limit.MinPerKey, limit.MaxPerKey); ok {
				c.PerKey = v
			}
			return c.Validate()
		})
	return c, ok
}

func (d *decoder) reqSpec(n *yaml.Node, path string) (r limit.ReqSpec, ok bool) {
	ok = d.limitSpec(n, path, "{key: $binary_remote_addr, rate: 10r/s, burst: 20}", reqKeys, "rate", "10r/s", &r.Key, &r.Zone, &r.Status, &r.DryRun,
		func(f *fields, rn *yaml.Node) error {
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
			return r.Validate()
		})
	return r, ok
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
