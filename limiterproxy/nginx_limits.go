package limiterproxy

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"stampede/limit"
)

// nginxRule is one limit prepared for the config.
type nginxRule struct {
	prefix string // "locations[1]." for a location's own limit
	kind   string // limit_conn or limit_req
	index  int
	key    string // as nginx writes it
	zone   string // zone name
	size   string // zone size
	notes  []string
	status int
	dryRun bool
	// limit_conn
	perKey int
	// limit_req
	rate    string
	burst   int
	delay   int
	noDelay bool
}

func (r nginxRule) name() string { return r.prefix + limit.LimitName(r.kind, r.index) }

// nginxScope is the server's limits or one location's own.
type nginxScope struct {
	prefix    string // "" for the server, "locations[1]." for a location
	suffix    string // "" for the server, "_l1" for location 1: zone and map names
	req, conn []nginxRule
}

// writeZones writes the limit_req_zone and limit_conn_zone directives of
// sc's limits, each after its notes.
func (sc *nginxScope) writeZones(p func(int, string, ...any)) {
	for _, r := range slices.Concat(sc.req, sc.conn) {
		for _, n := range r.notes {
			p(0, "# %s", n)
		}
		rate := ""
		if r.kind == "limit_req" {
			rate = " rate=" + r.rate
		}
		p(0, "%s_zone %s zone=%s:%s%s;", r.kind, r.key, r.zone, r.size, rate)
	}
}

// nginxScopeOf prepares the limits of one scope.
func nginxScopeOf(prefix, suffix string, conn []limit.ConnSpec, req []limit.ReqSpec, ts float64) (*nginxScope, error) {
	sc := &nginxScope{prefix: prefix, suffix: suffix}
	for i, s := range req {
		r, err := nginxReqRule(i, s, ts)
		if err != nil {
			return nil, err
		}
		r.prefix, r.zone = prefix, "stampede"+suffix+"_req"+strconv.Itoa(i)
		sc.req = append(sc.req, r)
	}
	for i, s := range conn {
		r, err := nginxConnRule(i, s)
		if err != nil {
			return nil, err
		}
		r.prefix, r.zone = prefix, "stampede"+suffix+"_conn"+strconv.Itoa(i)
		sc.conn = append(sc.conn, r)
	}
	if err := sameLocationSettings(sc.req); err != nil {
		return nil, err
	}
	if err := sameLocationSettings(sc.conn); err != nil {
		return nil, err
	}
	return sc, nil
}

// writeLimits writes a scope's limit directives. In a location (inLoc), a
// kind it has none of is inherited from the server, and only the headers
// of the inherited limits are written again, since a location's add_header
// replaces the server's.
func writeLimits(p func(int, string, ...any), in int, sc, server *nginxScope, inLoc bool, headers bool) {
	for _, r := range sc.req {
		d := ""
		if r.burst > 0 {
			d += " burst=" + strconv.Itoa(r.burst)
		}
		if r.noDelay {
			d += " nodelay"
		} else if r.delay > 0 {
			d += " delay=" + strconv.Itoa(r.delay)
		}
		p(in, "limit_req zone=%s%s;  # %s", r.zone, d, r.name())
	}
	writeLocationSettings(p, in, sc.req, server.req, inLoc)
	for _, r := range sc.conn {
		p(in, "limit_conn %s %d;  # %s", r.zone, r.perKey, r.name())
	}
	writeLocationSettings(p, in, sc.conn, server.conn, inLoc)
	if !headers || (inLoc && len(sc.req)+len(sc.conn) == 0) {
		// A location with no limits of its own and no add_header keeps
		// the server's add_header lines.
		return
	}
	reqScope, connScope := sc, sc
	if inLoc && len(sc.req) == 0 {
		reqScope = server
	}
	if inLoc && len(sc.conn) == 0 {
		connScope = server
	}
	if len(reqScope.req) > 0 {
		p(in, "add_header %s $stampede_limit_req%s always;", LimitHeader, reqScope.suffix)
		p(in, "add_header %s $stampede_dry_run_req%s always;", DryRunHeader, reqScope.suffix)
	}
	if len(connScope.conn) > 0 {
		p(in, "add_header %s $stampede_limit_conn%s always;", LimitHeader, connScope.suffix)
		p(in, "add_header %s $stampede_dry_run_conn%s always;", DryRunHeader, connScope.suffix)
	}
}

func nginxConnRule(i int, s limit.ConnSpec) (nginxRule, error) {
	r := nginxRule{kind: "limit_conn", index: i, perKey: s.PerKey, status: s.Status, dryRun: s.DryRun}
	if s.PerKey < 1 {
		return r, fmt.Errorf("nginx config: %s: per-key limit %d is not at least 1", r.name(), s.PerKey)
	}
	if err := r.common(s.Key, s.Zone, s.Status, "conn"); err != nil {
		return r, err
	}
	return r, nil
}

func nginxReqRule(i int, s limit.ReqSpec, ts float64) (nginxRule, error) {
	r := nginxRule{kind: "limit_req", index: i, status: s.Status, dryRun: s.DryRun,
		burst: s.Burst, delay: s.Delay, noDelay: s.NoDelay}
	if err := r.common(s.Key, s.Zone, s.Status, "req"); err != nil {
		return r, err
	}
	if s.Burst < 0 || s.Delay < 0 {
		return r, fmt.Errorf("nginx config: %s: burst %d and delay %d must not be negative", r.name(), s.Burst, s.Delay)
	}
	rate, err := limit.ParseRate(s.Rate)
	if err != nil {
		return r, fmt.Errorf("nginx config: %s: %v", r.name(), err)
	}
	if rate <= 0 {
		return r, fmt.Errorf("nginx config: %s: rate %q is not positive", r.name(), s.Rate)
	}
	if ts == 1 {
		r.rate = strings.TrimSpace(s.Rate)
		return r, nil
	}
	text, exact := nginxRate(float64(rate) / ts)
	r.rate = text
	if !exact {
		got, _ := limit.ParseRate(text)
		r.notes = append(r.notes, fmt.Sprintf("%s: %s at time scale %s is %.1f mr/s (milli-requests per second); rounded to nginx's nearest, %s = %d mr/s.",
			r.name(), s.Rate, fmtFloat(ts), float64(rate)/ts, text, got))
	}
	return r, nil
}

// common fills in the key, zone name and zone size.
func (r *nginxRule) common(key, zone string, status int, short string) error {
	k, err := limit.ParseKey(key)
	if err != nil {
		return fmt.Errorf("nginx config: %s: key %q: %v", r.name(), key, err)
	}
	r.key = k.String()
	if r.key == "" {
		return fmt.Errorf("nginx config: %s: empty key", r.name())
	}
	if status == 0 {
		r.status = limit.DefaultStatus
	} else if status < 400 || status > 599 {
		return fmt.Errorf("nginx config: %s: status %d is not between 400 and 599", r.name(), status)
	}
	r.zone = "stampede_" + short + strconv.Itoa(r.index)
	if zone == "" {
		zone = limit.DefaultZone
	}
	n, err := limit.ParseSize(zone)
	if err != nil {
		return fmt.Errorf("nginx config: %s: zone %q: %v", r.name(), zone, err)
	}
	r.size = zone
	if n < minNginxZone {
		r.size = "32k"
		r.notes = append(r.notes, fmt.Sprintf("%s: zone %s is below nginx's minimum; 32k instead.", r.name(), zone))
	}
	return nil
}

// sameLocationSettings checks that rules of one kind agree on what nginx
// sets per location.
func sameLocationSettings(rules []nginxRule) error {
	for _, r := range rules[min(1, len(rules)):] {
		f := rules[0]
		if r.status != f.status {
			return fmt.Errorf("nginx config: %s answers %d but %s answers %d; nginx's %s_status applies to every %s of a location, so give them one status",
				f.name(), f.status, r.name(), r.status, f.kind, f.kind)
		}
		if r.dryRun != f.dryRun {
			return fmt.Errorf("nginx config: %s has dry_run=%t but %s has dry_run=%t; nginx's %s_dry_run covers every %s of a location, so one location cannot hold both: "+
				"stampede runs the dry-run ones as a pass of their own over the requests the enforced ones admit, which nginx does only in a second proxy behind this one (a location with %s_dry_run on); set dry_run on all of them or none",
				f.name(), f.dryRun, r.name(), r.dryRun, f.kind, f.kind, f.kind)
		}
	}
	return nil
}

// writeLocationSettings writes the status and dry-run directives of rules,
// one scope's limits of one kind, which sameLocationSettings has found to
// agree. In a location (inLoc), a dry run switched on by the server's rules
// of that kind is switched off again where the location's own are enforced.
func writeLocationSettings(p func(int, string, ...any), in int, rules, serverRules []nginxRule, inLoc bool) {
	if len(rules) == 0 {
		return
	}
	f := rules[0]
	p(in, "%s_status %d;", f.kind, f.status)
	if f.dryRun {
		p(in, "%s_dry_run on;", f.kind)
	} else if inLoc && len(serverRules) > 0 && serverRules[0].dryRun {
		p(in, "%s_dry_run off;", f.kind)
	}
}

// writeStatusMaps writes the maps from $limit_conn_status or
// $limit_req_status to the header values of one scope (suffix "" for the
// server). With several limits of a kind nginx does not say which one
// decided, and the value is the kind alone.
func writeStatusMaps(p func(int, string, ...any), kind, suffix string, rules []nginxRule) {
	if len(rules) == 0 {
		return
	}
	short := strings.TrimPrefix(kind, "limit_")
	name := rules[0].prefix + kind
	if len(rules) == 1 {
		name = rules[0].name() + " " + strings.ReplaceAll(rules[0].key, "$", "${stampede_dollar}")
	}
	p(0, `map $%s_status $stampede_limit_%s%s { REJECTED "%s"; default ""; }`, kind, short, suffix, name)
	dry := "REJECTED_DRY_RUN"
	p(0, `map $%s_status $stampede_dry_run_%s%s { %s "%s"; default ""; }`, kind, short, suffix, dry, name)
}

// nginxRate writes a rate of mr milli-requests per second as nginx's Nr/s
// or Nr/m, reporting whether nginx's integer arithmetic gives it exactly.
func nginxRate(mr float64) (string, bool) {
	if perSec := mr / 1000; perSec >= 1 && perSec == math.Trunc(perSec) {
		return strconv.FormatInt(int64(perSec), 10) + "r/s", true
	}
	n := math.Round(mr * 60 / 1000)
	if n >= 1 && float64(int64(n)*1000/60) == mr {
		return strconv.FormatInt(int64(n), 10) + "r/m", true
	}
	if mr >= 1000*100 {
		return strconv.FormatInt(int64(math.Round(mr/1000)), 10) + "r/s", false
	}
	return strconv.FormatInt(int64(max(n, 1)), 10) + "r/m", false
}
