package scenarios

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"stampede/limit"
	"stampede/workerpool"
)

// Format writes s as a scenario file with every default filled in. What it
// writes loads again to an equal Scenario (but for File and Settings: the
// overrides are already applied, and listed in a comment at the top).
func (s *Scenario) Format(w io.Writer) error {
	doc, err := s.node()
	if err != nil {
		return err
	}
	header := fmt.Sprintf("# scenario %s, every default filled in\n", s.Name)
	keys := make([]string, 0, len(s.Settings))
	for k := range s.Settings {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		header += fmt.Sprintf("# --set %s=%s\n", k, s.Settings[k])
	}
	if _, err := io.WriteString(w, header); err != nil {
		return err
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	return enc.Close()
}

// Node builders.

type pair struct {
	k string
	v *yaml.Node
}

func kv(k string, v *yaml.Node) pair { return pair{k, v} }

func mapNode(flow bool, pairs ...pair) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	if flow {
		n.Style = yaml.FlowStyle
	}
	for _, p := range pairs {
		if p.v != nil {
			n.Content = append(n.Content, strNode(p.k), p.v)
		}
	}
	return n
}

func seqNode(flow bool, items ...*yaml.Node) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Content: items}
	if flow {
		n.Style = yaml.FlowStyle
	}
	return n
}

// strNode is a string; the encoder quotes it if it would read as something
// else.
func strNode(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func plainNode(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

func intNode(i int) *yaml.Node { return plainNode(strconv.Itoa(i)) }

// countNode is intNode with zero's meaning as a comment when i is 0.
func countNode(i int, zero string) *yaml.Node {
	n := intNode(i)
	if i == 0 {
		n.LineComment = "# " + zero
	}
	return n
}

func floatNode(f float64) *yaml.Node { return plainNode(strconv.FormatFloat(f, 'g', -1, 64)) }

func boolNode(b bool) *yaml.Node { return plainNode(strconv.FormatBool(b)) }

func durNode(d time.Duration, zero string) *yaml.Node {
	n := strNode(workerpool.FormatDuration(d))
	if d == 0 && zero != "" {
		n.LineComment = "# " + zero
	}
	return n
}

func (s *Scenario) node() (*yaml.Node, error) {
	b := s.Backend
	backlog := intNode(b.PoolConfig().ListenBacklog())
	if b.Backlog < 0 {
		backlog.LineComment = "# none may wait"
	}
	var routes []*yaml.Node
	for i, r := range b.Routes {
		if r.Service == nil {
			return nil, fmt.Errorf("scenario %s: backend.routes[%d] has no service time", s.Name, i)
		}
		routes = append(routes, mapNode(true, kv("name", strNode(r.Name)), kv("path", strNode(r.Path)), kv("service", strNode(r.Service.String()))))
	}
	backend := mapNode(false,
		kv("workers", intNode(max(b.Workers, 1))),
		kv("backlog", backlog),
		kv("timeout", durNode(b.Timeout, "none")),
		kv("on_client_abort", strNode(b.OnClientAbort.String())),
		kv("threads", intNode(max(b.Threads, 1))),
		kv("boot", durNode(b.Boot, "ready at once")),
		kv("max_requests", intNode(b.MaxRequests)),
		kv("max_requests_jitter", intNode(b.MaxRequestsJitter)),
		kv("backlog_overflow", strNode(b.Overflow.String())),
		kv("routes", seqNode(false, routes...)),
	)

	conn, req := limitNodes(s.Proxy.Limits.Conn, s.Proxy.Limits.Req)
	proxy := mapNode(false,
		kv("read_timeout", durNode(s.Proxy.ReadTimeout, "none")),
		kv("connect_timeout", durNode(s.Proxy.ConnectTimeout, "none")),
		kv("limit_conn", oneOrList(conn)),
		kv("limit_req", oneOrList(req)),
		kv("locations", locationsNode(s.Proxy.Limits.Locations)),
		kv("send_timeout", durNode(s.Proxy.SendTimeout, "")),
		kv("client_body_timeout", durNode(s.Proxy.ClientBodyTimeout, "")),
		kv("client_header_timeout", durNode(s.Proxy.ClientHeaderTimeout, "")),
		kv("upstream_keepalive", keepAliveNode(s.Proxy.UpstreamKeepAlive)),
	)

	var tenants []*yaml.Node
	for gi, g := range s.Tenants {
		load, err := s.loadNode(gi, &g.Load)
		if err != nil {
			return nil, err
		}
		host, hosts := strNode(g.Host), hostsNode(g.Hosts)
		if hosts != nil {
			host = nil
		}
		tenants = append(tenants, mapNode(false,
			kv("group", strNode(g.Group)),
			kv("count", intNode(max(g.Count, 1))),
			kv("host", host),
			kv("hosts", hosts),
			kv("addr", strNode(orDefault(g.Addr, DefaultAddr))),
			kv("addrs", optStr(g.Addrs)),
			kv("load", load)))
	}

	top := mapNode(false,
		kv("name", strNode(s.Name)),
		kv("description", optStr(s.Description)),
		kv("duration", strNode(workerpool.FormatDuration(s.Duration))),
		kv("time_scale", s.timeScaleNode()),
		kv("seed", plainNode(strconv.FormatUint(s.Seed, 10))),
		kv("backend", backend),
		kv("proxy", proxy),
		kv("tenants", seqNode(false, tenants...)),
		kv("slo", s.sloNode()),
		kv("sweep", sweepNode(s.Sweep)),
		kv("trace", optStr(s.TraceFile)),
		kv("recommend", recommendNode(s.Recommend)),
	)
	return top, nil
}

func (s *Scenario) loadNode(gi int, l *Load) (*yaml.Node, error) {
	var mix []pair
	for _, wr := range l.Routes {
		if wr.Route < 0 || wr.Route >= len(s.Backend.Routes) {
			return nil, fmt.Errorf("scenario %s: tenants[%d].load.routes: route %d does not exist", s.Name, gi, wr.Route)
		}
		mix = append(mix, kv(s.Backend.Routes[wr.Route].Name, floatNode(wr.Weight)))
	}
	pairs := []pair{kv("model", strNode(l.Model.String()))}
	if l.Model == Open {
		pairs = append(pairs, kv("arrivals", strNode(l.Arrivals.String())))
		if len(l.Stages) > 0 {
			var st []*yaml.Node
			for _, x := range l.Stages {
				st = append(st, mapNode(true, kv("duration", strNode(workerpool.FormatDuration(x.Duration))), kv("rate", strNode(formatRate(x.Rate)))))
			}
			pairs = append(pairs, kv("stages", seqNode(false, st...)))
		} else {
			pairs = append(pairs, kv("rate", strNode(formatRate(l.Rate))))
		}
		pairs = append(pairs, kv("max_in_flight", countNode(l.MaxInFlight, "the engine's default")))
	} else if l.Model == Traced {
		pairs = append(pairs, kv("max_in_flight", countNode(l.MaxInFlight, "the engine's default")))
	} else {
		pairs = append(pairs,
			kv("users", intNode(l.Users)),
			kv("think", durNode(l.Think, "")),
			kv("iterations", countNode(l.Iterations, "until stop")),
			kv("on_timeout", strNode(l.OnTimeout.String())))
	}
	pairs = append(pairs,
		kv("start", durNode(l.Start, "")),
		kv("stop", durNode(l.Stop, "the end of the run")),
		kv("routes", mapNode(true, mix...)),
		kv("client_timeout", durNode(l.ClientTimeout, "none")))
	return mapNode(false, pairs...), nil
}

func (s *Scenario) sloNode() *yaml.Node {
	if len(s.SLO) == 0 {
		return nil
	}
	n := &yaml.Node{Kind: yaml.MappingNode}
	lists := map[string]*yaml.Node{}
	for _, o := range s.SLO {
		l := lists[o.Group]
		if l == nil {
			l = seqNode(true)
			lists[o.Group] = l
			n.Content = append(n.Content, strNode(o.Group), l)
		}
		text := o.Text
		if text == "" {
			text = o.String()
		}
		l.Content = append(l.Content, strNode(text))
	}
	return n
}

// String returns the objective as "METRIC OP VALUE".
func (o SLO) String() string {
	if o.IsLatency() {
		return fmt.Sprintf("%s %s %s", o.Metric, o.Op, workerpool.FormatDuration(time.Duration(o.Threshold*float64(time.Millisecond))))
	}
	return fmt.Sprintf("%s %s %s%%", o.Metric, o.Op, strconv.FormatFloat(o.Threshold*100, 'g', -1, 64))
}

func sweepNode(axes []Axis) *yaml.Node {
	if len(axes) == 0 {
		return nil
	}
	var items []*yaml.Node
	for _, a := range axes {
		var vals []*yaml.Node
		for _, v := range a.Values {
			vals = append(vals, strNode(v))
		}
		items = append(items, mapNode(false, kv("path", strNode(a.Path)), kv("values", seqNode(true, vals...))))
	}
	return seqNode(false, items...)
}

func oneOrList(items []*yaml.Node) *yaml.Node {
	switch len(items) {
	case 0:
		return nil
	case 1:
		return items[0]
	}
	for _, it := range items {
		it.Style = yaml.FlowStyle
	}
	return seqNode(false, items...)
}

func optStr(s string) *yaml.Node {
	if s == "" {
		return nil
	}
	return strNode(s)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orDefaultInt(i, def int) int {
	if i == 0 {
		return def
	}
	return i
}

// limitNodes writes limit_conn and limit_req entries with their defaults.
func limitNodes(cs []limit.ConnSpec, rs []limit.ReqSpec) (conn, req []*yaml.Node) {
	for _, c := range cs {
		conn = append(conn, mapNode(true,
			kv("key", strNode(c.Key)), kv("per_key", intNode(c.PerKey)),
			kv("zone", strNode(orDefault(c.Zone, limit.DefaultZone))),
			kv("status", intNode(orDefaultInt(c.Status, limit.DefaultStatus))),
			kv("dry_run", boolNode(c.DryRun))))
	}
	for _, r := range rs {
		var delay *yaml.Node
		if !r.NoDelay {
			delay = intNode(r.Delay)
		}
		req = append(req, mapNode(true,
			kv("key", strNode(r.Key)), kv("rate", strNode(r.Rate)), kv("burst", intNode(r.Burst)),
			kv("delay", delay), kv("nodelay", boolNode(r.NoDelay)),
			kv("zone", strNode(orDefault(r.Zone, limit.DefaultZone))),
			kv("status", intNode(orDefaultInt(r.Status, limit.DefaultStatus))),
			kv("dry_run", boolNode(r.DryRun))))
	}
	return conn, req
}

// locationsNode writes proxy.locations; nil (left out) when there are none.
func locationsNode(locs []limit.Location) *yaml.Node {
	if len(locs) == 0 {
		return nil
	}
	var out []*yaml.Node
	for _, l := range locs {
		var path *yaml.Node
		if len(l.Paths) == 1 {
			path = strNode(l.Paths[0])
		} else {
			var ps []*yaml.Node
			for _, p := range l.Paths {
				ps = append(ps, strNode(p))
			}
			path = seqNode(true, ps...)
		}
		conn, req := limitNodes(l.Conn, l.Req)
		out = append(out, mapNode(false,
			kv("path", path),
			kv("limit_conn", oneOrList(conn)),
			kv("limit_req", oneOrList(req))))
	}
	return seqNode(false, out...)
}

// timeScaleNode is time_scale's value: auto, or the number.
func (s *Scenario) timeScaleNode() *yaml.Node {
	if s.TimeScaleAuto {
		return plainNode("auto")
	}
	return floatNode(s.TimeScale)
}
