package limiterproxy

import (
	"net/http"
	"time"
)

// This file fixes the API the rest of stampede (the live engine, the
// simulator, the scenario format and the CLI) is written against. Bodies
// marked "unimplemented" are to be filled in; exported names and signatures
// here are a contract.

// DefaultStatus is the status nginx answers a limited request with.
const DefaultStatus = http.StatusServiceUnavailable

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

// Config is a location's limits, in the order nginx applies them: every
// limit_req, then every limit_conn.
type Config struct {
	Conn []ConnSpec
	Req  []ReqSpec
}

// Policy is a compiled Config: the limiters with their zones. Both stages are
// pure (explicit time, no goroutines) so the simulator drives them in
// virtual time. A Policy is safe for concurrent use.
type Policy struct {
	Conn []ConnRule
	Req  []ReqRule
}

// ConnRule is one compiled limit_conn.
type ConnRule struct {
	Spec    ConnSpec
	Key     Key
	Limiter *ConnLimiter
}

// ReqRule is one compiled limit_req.
type ReqRule struct {
	Spec    ReqSpec
	Key     Key
	Limiter *ReqLimiter
}

// NewPolicy validates and compiles cfg. Errors name the limit (by kind and
// index) and the bad field.
func NewPolicy(cfg Config) (*Policy, error) { panic("unimplemented") }

// Verdict is what a stage decided for one request.
type Verdict uint8

const (
	Passed         Verdict = iota // admitted (possibly after Delay)
	Delayed                       // limit_req: admitted after Delay
	Rejected                      // answer Status
	RejectedDryRun                // would have been rejected; let through
	Skipped                       // no limit counted it (every key empty or too long)
)

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
func (p *Policy) ReqStage(now time.Time, keys []string) ReqDecision { panic("unimplemented") }

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
// the returned Slots holds none.
func (p *Policy) ConnStage(keys []string) (Slots, ConnDecision) { panic("unimplemented") }

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

// ReqLimiter is nginx's limit_req leaky bucket over a bounded zone.
type ReqLimiter struct{}

// KeyCount is one key's requests in flight.
type KeyCount struct {
	Key      string `json:"key"`
	InFlight int    `json:"in_flight"`
}

// Busiest returns up to n keys of the first limit_conn with the most
// requests in flight, busiest first; nil when there is no limit_conn.
func (p *Policy) Busiest(n int) []KeyCount { panic("unimplemented") }

// Handler applies a Policy in front of Next: limit_req first (a delay waits
// on the request's context), then every limit_conn in order, releasing on
// every path (response, client gone, upstream error, panic).
type Handler struct {
	Policy *Policy
	// Next serves admitted requests, usually the reverse proxy.
	Next http.Handler
	// Metrics, when not nil, counts decisions per limit.
	Metrics *Metrics
	// TimeScale plays model time faster than real time: limit_req sees
	// model time (wall time ÷ TimeScale) and its delays are waited for
	// TimeScale times as long. Zero means 1, real time.
	TimeScale float64
}

// Metrics are the proxy's Prometheus metrics, on a registry of their own.
type Metrics struct{ metrics }

// ProxyOptions configure NewProxy.
type ProxyOptions struct {
	// ReadTimeout is nginx's proxy_read_timeout: no response headers from
	// upstream within it answers 504. Zero means none.
	ReadTimeout time.Duration
}

// NginxOptions configure WriteNginx.
type NginxOptions struct {
	Listen      string // e.g. "127.0.0.1:8080"
	Upstream    string // e.g. "127.0.0.1:9000"
	ReadTimeout time.Duration
	// TimeScale writes the config for a scenario played TimeScale times
	// real time: rates divided by it, timeouts multiplied. Zero means 1.
	TimeScale float64
}
