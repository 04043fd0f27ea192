package accesslog

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"stampede/scenarios"
	"stampede/workerpool"
)

// Shares that decide what the scenario singles out.
const (
	// heavyShare: a tenant with this share of all worker time or more (and
	// twice its fair share, or half of all) is a group of its own.
	heavyShare = 0.10
	maxHeavy   = 5
	// A route is kept with this share of the requests or of the worker
	// time; the rest fold into the route "other".
	keepCountShare = 0.005
	keepWorkShare  = 0.01
	maxKeptRoutes  = 40
)

// The sort key of a request once groups are known: group (3 bits: at most
// maxHeavy+1 groups), tenant number in its group (23 bits), route (6 bits:
// at most maxKeptRoutes+1), then the tick (32 bits).
const (
	groupShift  = 61
	tenantShift = 38
	tenantMask  = 1<<23 - 1
	routeMask   = 1<<6 - 1
)

// built is the scenario Import writes.
type built struct {
	im      *importer
	routes  []builtRoute
	routeOf []int // raw route id → index in routes
	groups  []builtGroup
	start   int64         // tick of model time 0
	dur     time.Duration // model time
	sorted  *buckets      // the arrivals in the trace's order; nil: im.ticks is sorted
}

type builtRoute struct {
	name, path string
	service    workerpool.Dist
	requests   int64
}

type builtGroup struct {
	name     string
	heavy    *Heavy
	keys     []string // tenant keys, tenant n is keys[n-1]
	requests []int64  // per route
	perMin   []int64  // --fit: requests per model minute
}

// build decides the routes, the groups and the run's span, and orders the
// arrivals for the trace, in scratch when it is as long as they are.
func (im *importer) build(scratch []uint32) (*built, error) {
	b := &built{im: im}
	nRaw := len(im.routes) + 1
	count := make([]int64, nRaw)
	for _, tk := range im.ticks {
		count[tk&(1<<routeBits-1)]++
	}
	// Each raw route's mean service, falling back to all routes'.
	var allSvc hist
	for _, h := range im.svc {
		if h != nil {
			allSvc.merge(h)
		}
	}
	if allSvc.n == 0 {
		return nil, badInput("no request in the window has a service time (no upstream or worker time that is not an error)")
	}
	svcOf := func(rid int) *hist {
		if rid < len(im.svc) && im.svc[rid] != nil && im.svc[rid].n > 0 {
			return im.svc[rid]
		}
		return &allSvc
	}
	mean := make([]float64, nRaw)
	var workAll float64
	for rid := range nRaw {
		mean[rid] = svcOf(rid).mean()
		workAll += mean[rid] * float64(count[rid])
	}
	if !im.workExact {
		for _, tk := range im.ticks {
			tid := uint32(tk>>routeBits) & (maxTenants - 1)
			im.work[tid] += mean[tk&(1<<routeBits-1)]
		}
	}

	// Routes: the frequent and the costly ones, by worker time.
	order := make([]int, 0, nRaw)
	for rid := range nRaw {
		if count[rid] > 0 {
			order = append(order, rid)
		}
	}
	slices.SortFunc(order, func(a, c int) int {
		return cmp.Or(cmp.Compare(mean[c]*float64(count[c]), mean[a]*float64(count[a])), cmp.Compare(im.routeName(uint32(a)), im.routeName(uint32(c))))
	})
	b.routeOf = make([]int, nRaw)
	var other hist
	var otherCount int64
	otherIdx := -1
	names, paths := map[string]bool{}, map[string]bool{"/_other": true}
	for _, rid := range order {
		share := float64(count[rid]) / float64(len(im.ticks))
		wshare := mean[rid] * float64(count[rid]) / max(workAll, 1)
		if rid < len(im.routes) && len(b.routes) < maxKeptRoutes && (share >= keepCountShare || wshare >= keepWorkShare) {
			b.routeOf[rid] = len(b.routes)
			name := uniqueName(routeName(im.routes[rid]), names)
			path := safePath(im.routes[rid])
			for i := 2; paths[path]; i++ {
				path = safePath(im.routes[rid]) + "_" + strconv.Itoa(i)
			}
			paths[path] = true
			b.routes = append(b.routes, builtRoute{name: name, path: path, requests: count[rid], service: empirical(svcOf(rid), im.scale)})
			if rid >= len(im.svc) || im.svc[rid] == nil || im.svc[rid].n == 0 {
				im.sum.Notes = append(im.sum.Notes, fmt.Sprintf("route %s has no service time of its own: it gets all routes' distribution", name))
			}
			continue
		}
		if otherIdx < 0 {
			otherIdx = -2 // placed after the kept routes
		}
		b.routeOf[rid] = otherIdx
		other.merge(svcOf(rid))
		otherCount += count[rid]
		im.sum.Folded++
	}
	if otherIdx == -2 {
		oi := len(b.routes)
		for rid := range b.routeOf {
			if b.routeOf[rid] == -2 {
				b.routeOf[rid] = oi
			}
		}
		b.routes = append(b.routes, builtRoute{name: uniqueName("other", names), path: "/_other", requests: otherCount, service: empirical(&other, im.scale)})
	}
	im.sum.Routes = len(b.routes)

	// Tenants: the heavy ones by worker time, each a group, the rest one.
	var workSum float64
	for _, w := range im.work {
		workSum += w
	}
	byWork := make([]int, len(im.tenants))
	for i := range byWork {
		byWork[i] = i
	}
	slices.SortFunc(byWork, func(a, c int) int {
		return cmp.Or(cmp.Compare(im.work[c], im.work[a]), strings.Compare(im.tenants[a], im.tenants[c]))
	})
	groupOf := make([]int, len(im.tenants)) // tenant → group
	numberOf := make([]int, len(im.tenants))
	requests := make([]int64, len(im.tenants))
	for _, tk := range im.ticks {
		requests[uint32(tk>>routeBits)&(maxTenants-1)]++
	}
	im.sum.Requests = map[string]int64{}
	for tid, n := range requests {
		im.sum.Requests[im.tenants[tid]] = n
	}
	groupNames := map[string]bool{"all": true, "others": true}
	for _, tid := range byWork {
		share := im.work[tid] / max(workSum, 1e-9)
		if len(b.groups) >= maxHeavy || share < max(heavyShare, min(2/float64(len(im.tenants)), 0.5)) || len(im.tenants) == 1 {
			break
		}
		name := uniqueName(groupName(im.tenants[tid]), groupNames)
		h := Heavy{Key: im.tenants[tid], Group: name, Share: share, Requests: requests[tid]}
		im.sum.Heavy = append(im.sum.Heavy, h)
		groupOf[tid], numberOf[tid] = len(b.groups), 1
		b.groups = append(b.groups, builtGroup{name: name, heavy: &h, keys: []string{im.tenants[tid]}})
	}
	if len(b.groups) < len(im.tenants) {
		rest := builtGroup{name: "others"}
		if len(b.groups) == 0 {
			rest.name = "tenants"
		}
		var keys []int
		for tid := range im.tenants {
			if numberOf[tid] == 0 {
				keys = append(keys, tid)
			}
		}
		slices.SortFunc(keys, func(a, c int) int { return strings.Compare(im.tenants[a], im.tenants[c]) })
		for i, tid := range keys {
			groupOf[tid], numberOf[tid] = len(b.groups), i+1
			rest.keys = append(rest.keys, im.tenants[tid])
		}
		b.groups = append(b.groups, rest)
	}
	im.sum.Tenants = len(im.tenants)
	for gi := range b.groups {
		b.groups[gi].requests = make([]int64, len(b.routes))
	}

	// The span: from the window's start (or the first arrival) to past the
	// last arrival, in whole seconds of model time.
	first, last := uint64(math.MaxUint64), uint64(0)
	for i, tk := range im.ticks {
		tick := tk >> 32
		first, last = min(first, tick), max(last, tick)
		tid := uint32(tk>>routeBits) & (maxTenants - 1)
		g, n, r := groupOf[tid], numberOf[tid], b.routeOf[tk&(1<<routeBits-1)]
		b.groups[g].requests[r]++
		// Re-key for the sort: group, tenant, route, then time.
		im.ticks[i] = uint64(g)<<groupShift | uint64(n)<<tenantShift | uint64(r)<<32 | tick
	}
	// Model time 0 is --from when it is near the first arrival (so that
	// the replay's clock reads as the incident's), else the first arrival;
	// the end is --to on the same terms, else just past the last arrival.
	const near = 3_600_000 // ms
	b.start = int64(first)
	if from := im.opts.From.UnixMilli() - im.base; !im.opts.From.IsZero() && from <= b.start && b.start-from <= near {
		b.start = from
	}
	end := int64(last) + 1
	if to := im.opts.To.UnixMilli() - im.base; !im.opts.To.IsZero() && to > end && to-end <= near {
		end = to
	}
	b.dur = time.Duration(math.Ceil(float64(end-b.start)/1000/im.scale)) * time.Second
	im.sum.Start = time.UnixMilli(im.base + b.start).UTC()
	im.sum.Duration = b.dur
	if !im.opts.Fit {
		b.order(scratch)
	}
	return b, nil
}

// empirical returns a histogram's quantile table as a Dist in model time.
func empirical(h *hist, scale float64) workerpool.Dist {
	ps, vs := h.table(scale)
	return workerpool.Empirical{P: ps, V: vs}
}

// routeName makes a route name of a path: /api/method/frappe.desk.x →
// api-method-frappe_desk_x; / → root.
func routeName(path string) string {
	var b strings.Builder
	for _, c := range strings.Trim(strings.ReplaceAll(path, "{id}", "id"), "/") {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_':
			b.WriteRune(c)
		case c == '/':
			b.WriteByte('-')
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 60 {
		// The end of a path is what tells it apart.
		s = strings.TrimLeft(s[len(s)-60:], "-_")
	}
	if s == "" {
		return "root"
	}
	if _, err := strconv.Atoi(s); err == nil {
		return "r" + s
	}
	return s
}

// groupName makes a group name of a host: x.example.com → x-example-com.
func groupName(key string) string {
	var b strings.Builder
	for _, c := range key {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > 60 {
		s = s[:60]
	}
	if _, err := strconv.Atoi(s); err == nil || s == "" {
		s = "t-" + s
	}
	return s
}

func uniqueName(s string, used map[string]bool) string {
	name := s
	for i := 2; used[name]; i++ {
		name = s + "-" + strconv.Itoa(i)
	}
	used[name] = true
	return name
}

// model returns a tick's model time from the start of the run.
func (b *built) model(tick int64) time.Duration {
	return time.Duration(float64(tick-b.start) * float64(time.Millisecond) / b.im.scale)
}

// write writes the scenario and its trace (or its fitted stages).
func (b *built) write(scenario, trace io.Writer) error {
	im := b.im
	if !im.opts.Fit {
		tw := scenarios.NewTraceWriter(trace)
		b.writeTrace(tw)
		if err := tw.Close(); err != nil {
			return fmt.Errorf("writing the trace: %w", err)
		}
	} else {
		minutes := int(math.Ceil(b.dur.Minutes()))
		for gi := range b.groups {
			b.groups[gi].perMin = make([]int64, max(minutes, 1))
		}
		for _, k := range im.ticks {
			m := int(b.model(int64(k&math.MaxUint32)) / time.Minute)
			g := &b.groups[k>>groupShift]
			g.perMin[min(m, len(g.perMin)-1)]++
		}
	}
	return b.writeScenario(scenario)
}

// writeScenario writes the scenario file.
func (b *built) writeScenario(w io.Writer) error {
	im := b.im
	s := &im.sum
	var o strings.Builder
	fmt.Fprintf(&o, "# Imported by stampede import from %s: %d lines, %d requests used.\n", strings.Join(im.opts.Logs, ", "), s.Lines, s.Used)
	fmt.Fprintf(&o, "# Model time 0 is %s.\n", s.Start.Format(time.RFC3339Nano))
	if im.opts.Fit {
		o.WriteString("# Arrivals: Poisson at each tenant group's rate, fitted per minute (--fit).\n")
	} else {
		fmt.Fprintf(&o, "# Arrivals: the exact trace in %s, to %s (%s).\n", im.opts.TraceFile, fmtDur(time.Duration(float64(s.Precision)/im.scale)), s.PrecisionFrom)
	}
	fmt.Fprintf(&o, "# Service times: %s.\n", s.ServiceFrom)
	o.WriteString("# The proxy has no limits: this is the incident as it was. Next, play it, then sweep a limit:\n")
	fmt.Fprintf(&o, "#   stampede run %s.yaml --engine sim\n", im.opts.Name)
	fmt.Fprintf(&o, "#   stampede compare %s.yaml --engine sim --sweep proxy.limit_conn.per_key=off,2,4,8\n", im.opts.Name)
	fmt.Fprintf(&o, "name: %s\n", quote(im.opts.Name))
	fmt.Fprintf(&o, "description: %s\n", quote(fmt.Sprintf("Replay of %d requests of %d tenants from %s", s.Used, s.Tenants, strings.Join(im.opts.Logs, ", "))))
	fmt.Fprintf(&o, "duration: %s\n", fmtDur(b.dur))
	o.WriteString("time_scale: 1\nseed: 1\nbackend:\n")
	workers := im.workers()
	fmt.Fprintf(&o, "  workers: %d%s\n", workers, flagNote(im.opts.Workers == 0, "gunicorn's default; set the incident's with --workers"))
	backlog := cmp.Or(im.opts.Backlog, DefaultBacklog)
	fmt.Fprintf(&o, "  backlog: %d\n", backlog)
	fmt.Fprintf(&o, "  timeout: %s%s\n", fmtDur(cmp.Or(im.opts.Timeout, DefaultTimeout)), flagNote(im.opts.Timeout == 0, "gunicorn's default; Frappe runs 120s (--timeout)"))
	o.WriteString("  on_client_abort: continue\n  routes:\n")
	for _, r := range b.routes {
		fmt.Fprintf(&o, "    - {name: %s, path: %s, service: %s}  # %d requests\n", r.name, quote(r.path), quote(r.service.String()), r.requests)
	}
	fmt.Fprintf(&o, "proxy:\n  read_timeout: %s\n", fmtDur(cmp.Or(im.opts.ReadTimeout, DefaultReadTimeout)))
	o.WriteString("  # No limit_conn or limit_req: the incident as it was. `stampede compare` sweeps one, e.g.\n")
	o.WriteString("  # limit_conn: {key: $host, per_key: 4}\n")
	o.WriteString("tenants:\n")
	for gi, g := range b.groups {
		if g.heavy != nil {
			fmt.Fprintf(&o, "  - group: %s  # heavy: %.0f%% of the worker time, %d requests\n", g.name, 100*g.heavy.Share, g.heavy.Requests)
		} else {
			fmt.Fprintf(&o, "  - group: %s\n", g.name)
		}
		hosts := make([]string, len(g.keys))
		for i, k := range g.keys {
			hosts[i] = hostOf(k)
		}
		if len(hosts) == 1 {
			fmt.Fprintf(&o, "    host: %s\n", quote(hosts[0]))
		} else {
			fmt.Fprintf(&o, "    hosts: [%s]\n", joinQuoted(hosts))
		}
		if im.sum.TenantKey == "$remote_addr" {
			// Each client its own loopback address, as far as they go.
			switch {
			case len(hosts) == 1 && gi < 250:
				fmt.Fprintf(&o, "    addr: 127.0.1.%d\n", gi+1)
			case len(hosts) <= 250:
				fmt.Fprintf(&o, "    addr: 127.0.2.{i}\n")
			default:
				im.sum.Notes = append(im.sum.Notes, fmt.Sprintf("group %s has %d client addresses, more than the 250 loopback addresses it gets: they share 127.0.0.1, so a limit on $binary_remote_addr sees them as one", g.name, len(hosts)))
			}
		}
		var mix []string
		for ri, n := range g.requests {
			if n > 0 {
				mix = append(mix, fmt.Sprintf("%s: %d", b.routes[ri].name, n))
			}
		}
		if im.opts.Fit {
			fmt.Fprintf(&o, "    load:\n      model: open\n      routes: {%s}\n      stages:\n", strings.Join(mix, ", "))
			for m, n := range g.perMin {
				d := time.Minute
				if rest := b.dur - time.Duration(m)*time.Minute; rest < d {
					d = rest
				}
				rate := float64(n) / float64(len(g.keys)) / d.Minutes()
				fmt.Fprintf(&o, "        - {duration: %s, rate: %s/m}\n", fmtDur(d), strconv.FormatFloat(rate, 'g', 6, 64))
			}
		} else {
			fmt.Fprintf(&o, "    load: {model: trace, routes: {%s}}\n", strings.Join(mix, ", "))
		}
	}
	if !im.opts.Fit {
		fmt.Fprintf(&o, "trace: %s\n", quote(im.opts.TraceFile))
	}
	_, err := io.WriteString(w, o.String())
	return err
}

// safePath makes a path one a scenario's route accepts: printable ASCII
// without space, ? or #.
func safePath(p string) string {
	b := []byte(p)
	for i, c := range b {
		if c <= ' ' || c >= 0x7f || c == '?' || c == '#' || c == '"' || c == '\\' {
			b[i] = '_'
		}
	}
	return string(b)
}

// hostOf makes a tenant key a Host header the scenario accepts.
func hostOf(key string) string {
	var b strings.Builder
	for _, c := range key {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-._:[]", c) {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	s := b.String()
	if len(s) > 255 {
		s = s[:255]
	}
	return s
}

func flagNote(dflt bool, note string) string {
	if dflt {
		return "  # " + note
	}
	return ""
}

// quote writes s as a YAML double-quoted string (JSON's escapes are YAML's).
func quote(s string) string { return strconv.Quote(s) }

func joinQuoted(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return strings.Join(q, ", ")
}

// fmtDur prints d as scenario files write durations (2m rather than 2m0s):
// as a constant service time writes itself.
func fmtDur(d time.Duration) string { return workerpool.Constant{D: d}.String() }
