package limit

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"stampede/internal/errtree"
)

// The bounds of a Config, as Validate checks them. The scenario format and
// the proxy's flags check against the same constants.
const (
	// MinPerKey and MaxPerKey bound a limit_conn's requests in flight per
	// key (nginx's limit_conn number is at most 65535).
	MinPerKey = 1
	MaxPerKey = 65535
	// MaxBurst bounds a limit_req's burst and delay, in requests, so that
	// nginx's arithmetic on them, in milli-requests times 1000, stays
	// within an int64.
	MaxBurst = 1_000_000_000
	// MaxRate bounds the N of a rate, "Nr/s" or "Nr/m", so that N·1000
	// and the leaky bucket's arithmetic on it cannot overflow an int64.
	MaxRate = 1_000_000_000_000
	// MinStatus and MaxStatus bound the status a limit answers with.
	MinStatus = 400
	MaxStatus = 599
)

// DefaultStatus is the status nginx answers a limited request with.
const DefaultStatus = 503 // Service Unavailable

// DefaultConnectTimeout is nginx's default proxy_connect_timeout. It is
// declared here, beside the limits' defaults, so that the scenario format
// and the simulator agree with the proxy without importing it.
const DefaultConnectTimeout = 60 * time.Second

// MaxUpstreamKeepAlive bounds the idle upstream connections a proxy keeps
// (nginx's `upstream { keepalive N; }`): more idle connections than that
// would hold the upstream's sockets for nothing.
const MaxUpstreamKeepAlive = 4096

// DefaultZone is the zone size the scenario and CLI use when none is given.
const DefaultZone = "10m"

// ConnSpec declares one limit_conn: at most PerKey requests in flight per
// value of Key.
type ConnSpec struct {
	Key    string // an nginx-style key: $host, $binary_remote_addr, $http_x_tenant, $host$remote_addr
	PerKey int    // the limit, MinPerKey to MaxPerKey
	Zone   string // zone size as nginx writes it ("10m"); empty means DefaultZone
	Status int    // the answer over the limit, MinStatus to MaxStatus; zero means DefaultStatus
	DryRun bool   // count what would be rejected but let it through holding no slot
}

// ReqSpec declares one limit_req: nginx's leaky bucket per value of Key.
type ReqSpec struct {
	Key     string // as in ConnSpec
	Rate    string // "10r/s" or "30r/m", at most MaxRate per second
	Burst   int    // requests that may queue above the rate, 0 to MaxBurst
	Delay   int    // requests of the burst admitted without delay (delay=N), 0 to MaxBurst; ignored with NoDelay
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

// Location is a part of the server's URI space with limits of its own, as
// an nginx prefix location (`location /api/method/stock_balance { ... }`):
// a request goes to the location with the longest of all locations' Paths
// that its path begins with, and a request that matches none gets the
// server's limits (Config.Conn and Config.Req).
//
// As in nginx, a location's limit_conn list replaces the server's only
// when it has one: a location with no Conn inherits the server's limit_conn
// (the same zones, so the same counts), and likewise for Req, each kind on
// its own.
type Location struct {
	// Paths are the URI prefixes, each starting with "/". Matching is
	// nginx's: byte by byte, case-sensitive, against the request's path
	// decoded and with "//", "/./" and "/../" resolved.
	Paths []string
	Conn  []ConnSpec // none: the server's limit_conn apply
	Req   []ReqSpec  // none: the server's limit_req apply
}

// FieldError is one bad field of a Config. Field names it as the scenario
// format does: "limit_conn[0].per_key", "locations[1].limit_req[0].rate",
// "locations[0].path[1]"; for a ConnSpec or a ReqSpec alone, the field of
// the spec, "per_key".
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns what is wrong with the field.
func (e *FieldError) Unwrap() error { return e.Err }

// FieldErrors returns the FieldErrors err holds, as the Validate methods
// return them, in order, through any wrapping; nil when err is nil. An
// error that holds no FieldError comes back as one with an empty Field.
func FieldErrors(err error) []*FieldError {
	return errtree.Find(err, func(err error) (*FieldError, bool) { return &FieldError{Err: err}, true })
}

// fieldErrs collects FieldErrors under a prefix.
type fieldErrs struct {
	prefix string
	errs   []error
}

func (f *fieldErrs) add(field string, err error) {
	f.errs = append(f.errs, &FieldError{Field: f.prefix + field, Err: err})
}

func (f *fieldErrs) addf(field, format string, args ...any) {
	f.add(field, fmt.Errorf(format, args...))
}

// nest adds the errors of a part of the Config named field.
func (f *fieldErrs) nest(field string, err error) {
	for _, fe := range FieldErrors(err) {
		f.add(field+"."+fe.Field, fe.Err)
	}
}

func (f *fieldErrs) err() error { return errors.Join(f.errs...) }

// Validate checks every field of s against the bounds, and returns nil or
// one FieldError per bad field (see FieldErrors).
func (s ConnSpec) Validate() error {
	var f fieldErrs
	f.key(s.Key)
	if s.PerKey < MinPerKey || s.PerKey > MaxPerKey {
		f.addf("per_key", "%d is not a limit (want %d to %d requests in flight per key)", s.PerKey, MinPerKey, MaxPerKey)
	}
	f.zoneStatus(s.Zone, s.Status)
	return f.err()
}

// Validate checks every field of s against the bounds, and returns nil or
// one FieldError per bad field (see FieldErrors).
func (s ReqSpec) Validate() error {
	var f fieldErrs
	f.key(s.Key)
	if _, err := ParseRate(s.Rate); err != nil {
		f.add("rate", err)
	}
	if s.Burst < 0 || s.Burst > MaxBurst {
		f.addf("burst", "%d is not a burst (want 0 to %d requests)", s.Burst, MaxBurst)
	}
	if s.Delay < 0 || s.Delay > MaxBurst {
		f.addf("delay", "%d is not a delay (want 0 to %d requests)", s.Delay, MaxBurst)
	}
	f.zoneStatus(s.Zone, s.Status)
	return f.err()
}

func (f *fieldErrs) key(key string) {
	if _, err := ParseKey(key); err != nil {
		f.add("key", err)
	}
}

// zoneStatus checks the zone and the status every limit has.
func (f *fieldErrs) zoneStatus(zone string, status int) {
	if _, err := zoneBytes(zone); err != nil {
		f.add("zone", err)
	}
	if status != 0 && (status < MinStatus || status > MaxStatus) {
		f.addf("status", "%d is not allowed (want %d to %d, e.g. 503 or 429)", status, MinStatus, MaxStatus)
	}
}

// defaults fills in s's zone and status defaults and returns the zone's
// size in bytes; s has passed Validate.
func (s *ConnSpec) defaults() int64 { return fillDefaults(&s.Zone, &s.Status) }

// defaults fills in s's zone and status defaults and returns the zone's
// size in bytes; s has passed Validate.
func (s *ReqSpec) defaults() int64 { return fillDefaults(&s.Zone, &s.Status) }

func fillDefaults(zone *string, status *int) int64 {
	if *zone == "" {
		*zone = DefaultZone
	}
	if *status == 0 {
		*status = DefaultStatus
	}
	bytes, _ := zoneBytes(*zone)
	return bytes
}

// zoneBytes reads a limit's zone size; empty means DefaultZone.
func zoneBytes(zone string) (int64, error) {
	if zone == "" {
		zone = DefaultZone
	}
	size, err := ParseSize(zone)
	if err != nil {
		return 0, err
	}
	if size < MinZone {
		return 0, fmt.Errorf("%q is too small (nginx wants at least %dk)", zone, MinZone/1024)
	}
	return size, nil
}

// Validate checks every limit of c and its locations, and returns nil or
// one FieldError per bad field, the server's limits first (see
// FieldErrors). NewPolicy accepts exactly the Configs Validate passes.
func (c Config) Validate() error {
	var f fieldErrs
	c.validateLimits(&f, "")
	seen := map[string]int{}
	for i, loc := range c.Locations {
		name := "locations[" + strconv.Itoa(i) + "]"
		if len(loc.Paths) == 0 {
			f.addf(name+".path", "no path (want e.g. /api/method/stock_balance)")
		}
		for j, path := range loc.Paths {
			field := name + ".path[" + strconv.Itoa(j) + "]"
			if err := CheckLocationPath(path); err != nil {
				f.add(field, err)
				continue
			}
			if k, dup := seen[path]; dup {
				f.addf(field, "%q is locations[%d]'s already (nginx refuses a duplicate location)", path, k)
				continue
			}
			seen[path] = i
		}
		Config{Conn: loc.Conn, Req: loc.Req}.validateLimits(&f, name+".")
	}
	return f.err()
}

// validateLimits checks c's own limits, naming them after prefix.
func (c Config) validateLimits(f *fieldErrs, prefix string) {
	for i, s := range c.Conn {
		f.nest(prefix+LimitName("limit_conn", i), s.Validate())
	}
	for i, s := range c.Req {
		f.nest(prefix+LimitName("limit_req", i), s.Validate())
	}
}
