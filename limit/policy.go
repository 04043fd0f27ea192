package limit

import (
	"fmt"
	"strconv"
	"time"
)

// This file holds the API the rest of stampede (the live engine, the
// simulator, the scenario format and the CLI) is written against.

// DefaultStatus is the status nginx answers a limited request with.
const DefaultStatus = 503 // Service Unavailable

// DefaultConnectTimeout is nginx's default proxy_connect_timeout. It is
// declared here, beside the limits' defaults, so that the scenario format
// and the simulator agree with the proxy without importing it.
const DefaultConnectTimeout = 60 * time.Second

// DefaultZone is the zone size the scenario and CLI use when none is given.
const DefaultZone = "10m"

// ConnSpec declares one limit_conn: at most PerKey requests in flight per
// value of Key.
type ConnSpec struct {
	Key    string // an nginx-style key: $host, $binary_remote_addr, $http_x_tenant, $host$remote_addr
	PerKey int    // the limit; must be at least 1
	Zone   string // zone size as nginx writes it ("10m"); empty means DefaultZone
	Status int    // the answer over the limit, 400–599; zero means DefaultStatus
	DryRun bool   // count what would be rejected but let it through holding no slot
}

// ReqSpec declares one limit_req: nginx's leaky bucket per value of Key.
type ReqSpec struct {
	Key     string // as in ConnSpec
	Rate    string // "10r/s" or "30r/m"
	Burst   int    // requests that may queue above the rate
	Delay   int    // requests of the burst admitted without delay (delay=N); ignored with NoDelay
	NoDelay bool   // admit the whole burst at once
	Zone    string // as in ConnSpec
	Status  int    // as in ConnSpec
	DryRun  bool   // as in ConnSpec
}

// Config is the server's limits, in the order nginx applies them: every
// limit_req, then every limit_conn; and the locations with limits of their
// own. The zero Config limits nothing.
type Config struct {
	Conn      []ConnSpec
	Req       []ReqSpec
	Locations []Location // longest prefix wins; none matching: Conn and Req
}

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

// NewPolicy validates and compiles cfg. Errors name the limit (by kind and
// index, under its location if it has one) and the bad field
// ("limit_conn[0].per_key: ...", "locations[1].limit_req[0].rate: ...").
// The compiled rules' Specs have the defaults filled in (Status 503, Zone
// 10m) and Key written as nginx writes it ("host" becomes "$host"). The
// returned Policy holds the server's limits; For gives a request's
// location's.
func NewPolicy(cfg Config) (*Policy, error) {
	p, err := newRules(cfg, "")
	if err != nil {
		return nil, err
	}
	p.split()
	if err := p.compileLocations(cfg); err != nil {
		return nil, err
	}
	return p, nil
}

// newRules compiles cfg's own limits, naming them after prefix.
func newRules(cfg Config, prefix string) (*Policy, error) {
	p := &Policy{}
	for i, spec := range cfg.Conn {
		name := prefix + LimitName("limit_conn", i)
		key, err := ParseKey(spec.Key)
		if err != nil {
			return nil, fmt.Errorf("%s.key: %w", name, err)
		}
		if spec.PerKey < 1 || spec.PerKey > 65535 {
			return nil, fmt.Errorf("%s.per_key: %d is not a limit (want 1 to 65535 requests in flight per key)", name, spec.PerKey)
		}
		zone, err := common(name, &spec.Zone, &spec.Status)
		if err != nil {
			return nil, err
		}
		spec.Key = key.String()
		p.Conn = append(p.Conn, ConnRule{Name: name, Spec: spec, Key: key, Limiter: NewConnLimiter(spec.PerKey, zone)})
	}
	for i, spec := range cfg.Req {
		name := prefix + LimitName("limit_req", i)
		key, err := ParseKey(spec.Key)
		if err != nil {
			return nil, fmt.Errorf("%s.key: %w", name, err)
		}
		rate, err := ParseRate(spec.Rate)
		if err != nil {
			return nil, fmt.Errorf("%s.rate: %w", name, err)
		}
		if spec.Burst < 0 || spec.Burst > maxBurst {
			return nil, fmt.Errorf("%s.burst: %d is not a burst (want 0 to %d requests)", name, spec.Burst, maxBurst)
		}
		if spec.Delay < 0 || spec.Delay > maxBurst {
			return nil, fmt.Errorf("%s.delay: %d is not a delay (want 0 to %d requests)", name, spec.Delay, maxBurst)
		}
		zone, err := common(name, &spec.Zone, &spec.Status)
		if err != nil {
			return nil, err
		}
		spec.Key = key.String()
		p.Req = append(p.Req, ReqRule{Name: name, Spec: spec, Key: key, Limiter: NewReqLimiter(rate, spec.Burst, spec.Delay, spec.NoDelay, zone)})
	}
	return p, nil
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

// common checks the zone and status every limit has, fills in their
// defaults, and returns the zone's size in bytes.
func common(name string, zone *string, status *int) (int64, error) {
	bytes, err := parseZone(name, *zone)
	if err != nil {
		return 0, err
	}
	if *status, err = checkStatus(name, *status); err != nil {
		return 0, err
	}
	if *zone == "" {
		*zone = DefaultZone
	}
	return bytes, nil
}

// Verdict is what a stage decided for one request.
type Verdict uint8

const (
	Passed         Verdict = iota // admitted (possibly after Delay)
	Delayed                       // limit_req: admitted after Delay
	Rejected                      // answer Status
	RejectedDryRun                // would have been rejected; let through
	Skipped                       // no limit counted it (every key empty or too long)
)

// String names the verdict as nginx's $limit_req_status does.
func (v Verdict) String() string {
	switch v {
	case Passed:
		return "PASSED"
	case Delayed:
		return "DELAYED"
	case Rejected:
		return "REJECTED"
	case RejectedDryRun:
		return "REJECTED_DRY_RUN"
	case Skipped:
		return "SKIPPED"
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// ReqDecision is the limit_req stage's decision.
type ReqDecision struct {
	Verdict Verdict
	Delay   time.Duration // how long to hold the request before the limit_conn stage
	Rule    int           // the rule that rejected or set the delay; -1 if none
	Status  int           // the status to answer when Verdict is Rejected
}

// ReqStage runs every limit_req for one request whose keys are keys
// (keys[i] for p.Req[i], as Key.Append gives them; "" means not counted) at
// now, with nginx's lookup-then-account semantics across several limits.
//
// As in nginx, every limit of a pass but the last counted one is first only
// checked against its burst, holding its key; the last is checked and
// accounted; then the held ones are accounted and the longest delay wins.
// When a limit rejects, the held keys are let go unaccounted and nothing is
// charged. A rejecting dry-run limit gives RejectedDryRun (let the request
// through, nothing charged by its pass, as nginx). A dry-run limit's delay
// is charged as nginx charges it but not waited for: if no enforced limit
// delays, the decision is Passed with Rule naming the dry-run limit that
// would have delayed. With enforced and dry-run limits mixed, a request the
// enforced pass rejects never reaches the dry-run pass; one it admits keeps
// the enforced pass's delay, whatever the dry-run pass says.
func (p *Policy) ReqStage(now time.Time, keys []string) ReqDecision {
	switch len(p.reqPasses) {
	case 0:
		return ReqDecision{Verdict: Skipped, Rule: -1}
	case 1:
		return p.reqPass(now, keys, p.reqPasses[0])
	}
	e := p.reqPass(now, keys, p.reqPasses[0])
	if e.Verdict == Rejected {
		return e
	}
	d := p.reqPass(now, keys, p.reqPasses[1])
	switch {
	case d.Verdict == RejectedDryRun:
		d.Delay = e.Delay
		return d
	case e.Verdict == Skipped && d.Verdict == Skipped:
		return d
	case e.Verdict == Delayed, e.Rule >= 0, d.Verdict == Skipped:
		return e
	}
	return d
}

// reqPass is one nginx limit_req pass over the rules idx, in order.
func (p *Policy) reqPass(now time.Time, keys []string, idx []int) ReqDecision {
	ms := unixMilli(now)
	// held[j] is the entry rule idx[j]'s lookup holds until it is
	// accounted or unlocked, as nginx's ctx->node.
	var small [8]heldEntry
	held := small[:0]
	if len(idx) > len(small) {
		held = make([]heldEntry, 0, len(idx))
	}
	rc, excess := lookupSkipped, int64(0)
	n := 0
	for ; n < len(idx); n++ {
		held = append(held, heldEntry{})
		key := keyAt(keys, idx[n])
		if key == "" || len(key) > MaxReqKey {
			continue
		}
		var e *reqEntry
		var sh *reqShard
		rc, excess, e, sh = p.Req[idx[n]].Limiter.lookup(key, ms, n == len(idx)-1)
		if rc != lookupAgain {
			break
		}
		held[n] = heldEntry{e, sh}
	}
	switch rc {
	case lookupSkipped:
		return ReqDecision{Verdict: Skipped, Rule: -1}
	case lookupBusy, lookupFull:
		for j := range n {
			if h := held[j]; h.e != nil {
				p.Req[idx[j]].Limiter.unlock(h.e, h.sh)
			}
		}
		spec := &p.Req[idx[n]].Spec
		if spec.DryRun {
			return ReqDecision{Verdict: RejectedDryRun, Rule: idx[n], Status: spec.Status}
		}
		return ReqDecision{Verdict: Rejected, Rule: idx[n], Status: spec.Status}
	case lookupAgain:
		// The last limit's key was not counted: nothing was accounted yet.
		excess = 0
	}
	// nginx's ngx_http_limit_req_account: the limit that ended the loop
	// sets the first delay; then every held limit, last to first, is
	// accounted and a strictly longer delay wins. A dry-run limit's delay
	// is accounted but not waited for.
	last := min(n, len(idx)-1)
	var wait, dry time.Duration
	waitRule, dryRule := -1, -1
	consider := func(i int, d time.Duration) {
		if p.Req[i].Spec.DryRun {
			if d > dry {
				dry, dryRule = d, i
			}
		} else if d > wait {
			wait, waitRule = d, i
		}
	}
	consider(idx[last], p.Req[idx[last]].Limiter.delayFor(excess))
	for j := n - 1; j >= 0; j-- {
		h := held[j]
		if h.e == nil {
			continue
		}
		l := p.Req[idx[j]].Limiter
		consider(idx[j], l.delayFor(l.account(h.e, h.sh, ms)))
	}
	switch {
	case wait > 0:
		return ReqDecision{Verdict: Delayed, Delay: wait, Rule: waitRule}
	case dry > 0:
		return ReqDecision{Verdict: Passed, Rule: dryRule}
	}
	return ReqDecision{Verdict: Passed, Rule: -1}
}

// ConnDecision is the limit_conn stage's decision.
type ConnDecision struct {
	Verdict Verdict
	Rule    int // the rule that rejected; -1 if none
	Status  int // the status to answer when Verdict is Rejected
}

// Slots holds the limit_conn slots one request took. Its zero value holds
// none. Release frees them all; calling it again on the same Slots does
// nothing.
type Slots struct {
	n     int
	small [4]Slot
	more  []Slot
}

// Release frees every slot held. A second call on the same Slots is a no-op.
func (s *Slots) Release() {
	for i := 0; i < s.n; i++ {
		if i < len(s.small) {
			s.small[i].Release()
		} else {
			s.more[i-len(s.small)].Release()
		}
	}
	s.n = 0
	s.more = s.more[:0]
}

// ConnStage takes a slot from every limit_conn in order (keys[i] for
// p.Conn[i]). When one rejects, the slots already taken are released and
// the returned Slots holds none. When the rejecting limit is in dry run the
// verdict is RejectedDryRun: the request goes on holding no slot of its
// pass and the limits after it in that pass are not checked, as nginx
// does; the slots of the enforced limits beside it are kept. Skipped means
// no limit counted the request (every key empty or over MaxConnKey bytes).
// The caller must Release the returned Slots when the request ends.
func (p *Policy) ConnStage(keys []string) (Slots, ConnDecision) {
	return p.connStage(func(i int) (Slot, Verdict) { return p.Conn[i].Limiter.Acquire(keyAt(keys, i)) })
}

// connStage runs the limit_conn passes, acquire taking rule i's slot.
func (p *Policy) connStage(acquire func(i int) (Slot, Verdict)) (Slots, ConnDecision) {
	var s Slots
	d := ConnDecision{Verdict: Skipped, Rule: -1}
	for _, idx := range p.connPasses {
		from := s.n
		counted := false
		for _, i := range idx {
			slot, v := acquire(i)
			switch v {
			case Skipped:
				continue
			case Rejected:
				s.releaseFrom(from)
				r := &p.Conn[i]
				if !r.Spec.DryRun {
					s.Release()
					return Slots{}, ConnDecision{Verdict: Rejected, Rule: i, Status: r.Spec.Status}
				}
				// nginx's ngx_http_limit_conn_cleanup_all for this
				// pass; the pass ends here.
				return s, ConnDecision{Verdict: RejectedDryRun, Rule: i, Status: r.Spec.Status}
			}
			counted = true
			s.add(slot)
		}
		if counted {
			d = ConnDecision{Verdict: Passed, Rule: -1}
		}
	}
	return s, d
}

// ConnKeys are one client's limit_conn keys prepared for a Policy's
// limiters (see ConnLimiter.Key), for a caller that sends many requests
// with the same keys, as the simulator does for each tenant. The zero
// ConnKeys has every key empty, so no limit counts its requests. ConnKeys
// are never changed once made and are safe for concurrent use.
type ConnKeys struct {
	keys []ConnKey
}

// ConnKeys prepares keys (keys[i] for p.Conn[i], as for ConnStage) for
// ConnStageKeys.
func (p *Policy) ConnKeys(keys []string) ConnKeys {
	k := ConnKeys{keys: make([]ConnKey, len(p.Conn))}
	for i := range p.Conn {
		k.keys[i] = p.Conn[i].Limiter.Key(keyAt(keys, i))
	}
	return k
}

// ConnStageKeys is ConnStage over keys prepared by p.ConnKeys: the same
// decisions, without hashing the keys again.
func (p *Policy) ConnStageKeys(keys ConnKeys) (Slots, ConnDecision) {
	return p.connStage(func(i int) (Slot, Verdict) {
		var k ConnKey
		if i < len(keys.keys) {
			k = keys.keys[i]
		}
		return p.Conn[i].Limiter.AcquireKey(k)
	})
}

// Key is a compiled nginx key expression: variables ($host,
// $binary_remote_addr, $remote_addr, $http_NAME) and literal text,
// concatenated. The zero Key evaluates to empty.
type Key struct {
	src   string
	parts []keyPart
}

type keyPart struct {
	kind int
	lit  string
}

// String returns the expression as nginx writes it.
func (k Key) String() string { return k.src }

// Rate is a limit_req rate in nginx's unit, milli-requests per second.
type Rate int64

// KeyCount is one key's requests in flight.
type KeyCount struct {
	Key      string `json:"key"`
	InFlight int    `json:"in_flight"`
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

// heldEntry is a limit_req entry held between lookup and account.
type heldEntry struct {
	e  *reqEntry
	sh *reqShard
}

// lookupSkipped is ReqStage's "no limit counted the request" (nginx's
// NGX_DECLINED), next to lookup's results.
const lookupSkipped = -1

func keyAt(keys []string, i int) string {
	if i < len(keys) {
		return keys[i]
	}
	return ""
}

func parseZone(name, zone string) (int64, error) {
	if zone == "" {
		zone = DefaultZone
	}
	size, err := ParseSize(zone)
	if err != nil {
		return 0, fmt.Errorf("%s.zone: %w", name, err)
	}
	if size < MinZone {
		return 0, fmt.Errorf("%s.zone: %q is too small (nginx wants at least %dk)", name, zone, MinZone/1024)
	}
	return size, nil
}

func checkStatus(name string, status int) (int, error) {
	if status == 0 {
		return DefaultStatus, nil
	}
	if status < 400 || status > 599 {
		return 0, fmt.Errorf("%s.status: %d is not allowed (want 400 to 599, e.g. 503 or 429)", name, status)
	}
	return status, nil
}
