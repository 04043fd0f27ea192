package limit

import (
	"strconv"
)

// Policy is a compiled Config: the limiters with their zones. Both stages are
// pure (explicit time, no goroutines) so the simulator drives them in
// virtual time. A Policy is safe for concurrent use.
//
// The enforced limits of a kind decide as one nginx pass, exactly as if the
// dry-run limits of that kind were not there; the dry-run limits are a pass
// of their own, as nginx runs the limits of a location with limit_req_dry_run
// or limit_conn_dry_run on, over the requests the enforced pass admitted. A
// kind whose limits are all enforced or all dry-run is one pass, nginx's
// own.
type Policy struct {
	Conn []ConnRule
	Req  []ReqRule

	// Locations are the locations with their compiled limits; a request
	// that matches none gets Conn and Req. See For.
	Locations []LocationPolicy

	// The rules of each kind in passes: enforced first, then dry-run;
	// one pass when the kind does not mix them.
	reqPasses, connPasses [][]int
}

// passes splits rules 0..n-1 into the enforced ones and the dry-run ones,
// each in order; one pass of all when they do not mix.
func passes(n int, dry func(int) bool) [][]int {
	var enforced, dryRun []int
	for i := range n {
		if dry(i) {
			dryRun = append(dryRun, i)
		} else {
			enforced = append(enforced, i)
		}
	}
	switch {
	case len(enforced) == 0 && len(dryRun) == 0:
		return nil
	case len(enforced) == 0:
		return [][]int{dryRun}
	case len(dryRun) == 0:
		return [][]int{enforced}
	}
	return [][]int{enforced, dryRun}
}

// ConnRule is one compiled limit_conn.
type ConnRule struct {
	Name    string // "limit_conn[0]", or "locations[1].limit_conn[0]" for a location's own
	Spec    ConnSpec
	Key     Key
	Limiter *ConnLimiter
}

// ReqRule is one compiled limit_req.
type ReqRule struct {
	Name    string // "limit_req[0]", or "locations[1].limit_req[0]" for a location's own
	Spec    ReqSpec
	Key     Key
	Limiter *ReqLimiter
}

// NewPolicy validates cfg (see Config.Validate, whose errors it returns)
// and compiles it. The compiled rules' Specs have the defaults filled in
// (Status 503, Zone 10m) and Key written as nginx writes it ("host"
// becomes "$host"). The returned Policy holds the server's limits; For
// gives a request's location's.
func NewPolicy(cfg Config) (*Policy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := newRules(cfg, "")
	p.split()
	p.compileLocations(cfg)
	return p, nil
}

// newRules compiles cfg's own limits, which Validate passed, naming them
// after prefix.
func newRules(cfg Config, prefix string) *Policy {
	p := &Policy{}
	for i, spec := range cfg.Conn {
		key, _ := ParseKey(spec.Key)
		zone := spec.defaults()
		spec.Key = key.String()
		p.Conn = append(p.Conn, ConnRule{Name: prefix + LimitName("limit_conn", i), Spec: spec, Key: key, Limiter: NewConnLimiter(spec.PerKey, zone)})
	}
	for i, spec := range cfg.Req {
		key, _ := ParseKey(spec.Key)
		rate, _ := ParseRate(spec.Rate)
		zone := spec.defaults()
		spec.Key = key.String()
		p.Req = append(p.Req, ReqRule{Name: prefix + LimitName("limit_req", i), Spec: spec, Key: key, Limiter: NewReqLimiter(rate, spec.Burst, spec.Delay, spec.NoDelay, zone)})
	}
	return p
}

// LimitName names rule i of a kind ("limit_conn" or "limit_req") as the
// metrics' limit label, the X-Stampede-Limit header and the nginx comments
// do: "limit_conn[0]".
func LimitName(kind string, i int) string {
	return kind + "[" + strconv.Itoa(i) + "]"
}

// split sorts p's rules into their passes.
func (p *Policy) split() {
	p.reqPasses = passes(len(p.Req), func(i int) bool { return p.Req[i].Spec.DryRun })
	p.connPasses = passes(len(p.Conn), func(i int) bool { return p.Conn[i].Spec.DryRun })
}

// Busiest returns up to n keys of the first limit_conn (see KeysLimiter)
// with the most requests in flight, busiest first; nil when there is no
// limit_conn.
func (p *Policy) Busiest(n int) []KeyCount {
	l := p.KeysLimiter()
	if l == nil {
		return nil
	}
	return l.Busiest(n)
}

// Solo makes p's limit_conn limiters, its locations' included, a single
// goroutine's (see ConnLimiter.Solo): p is then not safe for concurrent
// use. Call it before any other method.
func (p *Policy) Solo() {
	for _, r := range p.Conn {
		r.Limiter.Solo()
	}
	for _, l := range p.Locations {
		for _, r := range l.Policy.Conn {
			r.Limiter.Solo()
		}
	}
}

// KeysLimiter returns the limiter whose keys stand for the policy's
// in-flight per key: the server's first limit_conn, or, when the server
// has none, the first location's own first limit_conn; nil when there is
// no limit_conn at all.
func (p *Policy) KeysLimiter() *ConnLimiter {
	if len(p.Conn) > 0 {
		return p.Conn[0].Limiter
	}
	for _, l := range p.Locations {
		if len(l.Policy.Conn) > 0 {
			return l.Policy.Conn[0].Limiter
		}
	}
	return nil
}

func keyAt(keys []string, i int) string {
	if i < len(keys) {
		return keys[i]
	}
	return ""
}
