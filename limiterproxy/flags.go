package limiterproxy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"stampede/limit"
)

// Examples of the flag forms, quoted in parse errors.
const (
	connFlagExample = `'$host=4' or '$binary_remote_addr=10,zone=10m,status=429,dry_run'`
	reqFlagExample  = `'$binary_remote_addr=10r/s,burst=20,nodelay' or '$host=30r/m,burst=12,delay=8'`
)

// ParseConnFlag reads a --limit-conn value: KEY=N, then optional
// comma-separated options zone=SIZE, status=CODE and dry_run. The key's "$"
// may be left out ("host=4" is "$host=4"). Errors say what is wrong and give
// an example.
func ParseConnFlag(s string) (limit.ConnSpec, error) {
	key, val, opts, err := splitFlag(s, connFlagExample)
	if err != nil {
		return limit.ConnSpec{}, err
	}
	n, err := strconv.Atoi(val)
	if err != nil || n < 1 {
		return limit.ConnSpec{}, fmt.Errorf("%q: limit %q is not a whole number of at least 1 (want e.g. %s)", s, val, connFlagExample)
	}
	spec := limit.ConnSpec{Key: key, PerKey: n}
	for _, o := range opts {
		ok, err := commonOpt(s, connFlagExample, o, &spec.Zone, &spec.Status, &spec.DryRun)
		if !ok {
			err = fmt.Errorf("%q: unknown option %q (want zone=SIZE, status=CODE or dry_run, e.g. %s)", s, o, connFlagExample)
		}
		if err != nil {
			return limit.ConnSpec{}, err
		}
	}
	if err := checkFlag(s, connFlagExample, spec.Validate()); err != nil {
		return limit.ConnSpec{}, err
	}
	return spec, nil
}

// ParseReqFlag reads a --limit-req value: KEY=RATE (Nr/s or Nr/m), then
// optional comma-separated options burst=N, nodelay or delay=N, zone=SIZE,
// status=CODE and dry_run. The key's "$" may be left out. Errors say what
// is wrong and give an example.
func ParseReqFlag(s string) (limit.ReqSpec, error) {
	key, val, opts, err := splitFlag(s, reqFlagExample)
	if err != nil {
		return limit.ReqSpec{}, err
	}
	if r, err := limit.ParseRate(val); err != nil || r <= 0 {
		return limit.ReqSpec{}, fmt.Errorf("%q: rate %q is not a rate (want Nr/s or Nr/m with N ≥ 1, e.g. %s)", s, val, reqFlagExample)
	}
	spec := limit.ReqSpec{Key: key, Rate: val}
	hasDelay := false
	for _, o := range opts {
		name, v, hasV := strings.Cut(o, "=")
		switch {
		case name == "burst" && hasV:
			spec.Burst, err = flagCount(s, "burst", v, reqFlagExample)
		case name == "delay" && hasV:
			spec.Delay, err = flagCount(s, "delay", v, reqFlagExample)
			hasDelay = true
		case name == "nodelay" && !hasV:
			spec.NoDelay = true
		default:
			var ok bool
			if ok, err = commonOpt(s, reqFlagExample, o, &spec.Zone, &spec.Status, &spec.DryRun); !ok {
				err = fmt.Errorf("%q: unknown option %q (want burst=N, nodelay, delay=N, zone=SIZE, status=CODE or dry_run, e.g. %s)", s, o, reqFlagExample)
			}
		}
		if err != nil {
			return limit.ReqSpec{}, err
		}
	}
	if hasDelay && spec.NoDelay {
		return limit.ReqSpec{}, fmt.Errorf("%q: nodelay and delay=N exclude each other (want e.g. %s)", s, reqFlagExample)
	}
	if err := checkFlag(s, reqFlagExample, spec.Validate()); err != nil {
		return limit.ReqSpec{}, err
	}
	return spec, nil
}

// commonOpt reads the option o of the flag s if it is one every limit has:
// zone=SIZE, status=CODE or dry_run; ok is false for any other.
func commonOpt(s, example, o string, zone *string, status *int, dryRun *bool) (ok bool, err error) {
	name, v, hasV := strings.Cut(o, "=")
	switch {
	case name == "zone" && hasV:
		*zone, err = flagZone(s, v, example)
	case name == "status" && hasV:
		*status, err = flagStatus(s, v, example)
	case (name == "dry_run" || name == "dry-run") && !hasV:
		*dryRun = true
	default:
		return false, nil
	}
	return true, err
}

// checkFlag words the first of a spec's Validate errors for the flag s.
func checkFlag(s, example string, err error) error {
	if fes := limit.FieldErrors(err); len(fes) > 0 {
		return fmt.Errorf("%q: %v; e.g. %s", s, fes[0], example)
	}
	return nil
}

// splitFlag splits KEY=VALUE,opt,opt and normalises the key as ParseKey
// writes it.
func splitFlag(s, example string) (key, val string, opts []string, err error) {
	parts := strings.Split(s, ",")
	k, v, ok := strings.Cut(parts[0], "=")
	k, v = strings.TrimSpace(k), strings.TrimSpace(v)
	if !ok || k == "" || v == "" {
		return "", "", nil, fmt.Errorf("%q: want KEY=VALUE first (e.g. %s)", s, example)
	}
	pk, err := limit.ParseKey(k)
	if err != nil {
		return "", "", nil, fmt.Errorf("%q: %v (want e.g. %s)", s, err, example)
	}
	for _, o := range parts[1:] {
		o = strings.TrimSpace(o)
		if o == "" {
			return "", "", nil, fmt.Errorf("%q: empty option (want e.g. %s)", s, example)
		}
		opts = append(opts, o)
	}
	return pk.String(), v, opts, nil
}

func flagZone(s, v, example string) (string, error) {
	if n, err := limit.ParseSize(v); err != nil || n <= 0 {
		return "", fmt.Errorf("%q: zone %q is not a size (want bytes, or k or m, e.g. zone=10m in %s)", s, v, example)
	}
	return v, nil
}

func flagStatus(s, v, example string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < limit.MinStatus || n > limit.MaxStatus {
		return 0, fmt.Errorf("%q: status %q is not between %d and %d (want e.g. status=429 in %s)", s, v, limit.MinStatus, limit.MaxStatus, example)
	}
	return n, nil
}

func flagCount(s, name, v, example string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q: %s %q is not a whole number ≥ 0 (want e.g. %s)", s, name, v, example)
	}
	return n, nil
}

// FormatConnFlag writes spec as ParseConnFlag reads it.
func FormatConnFlag(spec limit.ConnSpec) string {
	var b strings.Builder
	b.WriteString(spec.Key)
	b.WriteString("=")
	b.WriteString(strconv.Itoa(spec.PerKey))
	writeCommon(&b, spec.Zone, spec.Status, spec.DryRun)
	return b.String()
}

// FormatReqFlag writes spec as ParseReqFlag reads it.
func FormatReqFlag(spec limit.ReqSpec) string {
	var b strings.Builder
	b.WriteString(spec.Key)
	b.WriteString("=")
	b.WriteString(spec.Rate)
	if spec.Burst != 0 {
		b.WriteString(",burst=" + strconv.Itoa(spec.Burst))
	}
	if spec.NoDelay {
		b.WriteString(",nodelay")
	} else if spec.Delay != 0 {
		b.WriteString(",delay=" + strconv.Itoa(spec.Delay))
	}
	writeCommon(&b, spec.Zone, spec.Status, spec.DryRun)
	return b.String()
}

func writeCommon(b *strings.Builder, zone string, status int, dryRun bool) {
	if zone != "" {
		b.WriteString(",zone=" + zone)
	}
	if status != 0 {
		b.WriteString(",status=" + strconv.Itoa(status))
	}
	if dryRun {
		b.WriteString(",dry_run")
	}
}

// SplitLocationFlag splits the location off a --limit-conn or --limit-req
// value: "/api/method/stock_balance:$host=4" is the limit "$host=4" of the
// location /api/method/stock_balance, and "/a,/b:$host=4" that of one
// location with the two prefixes /a and /b. A value that does not start
// with "/" has no location (paths nil): a limit of the server. The paths
// end at the first ":", so a path holding ":" or "," cannot be given this
// way (use a scenario file).
func SplitLocationFlag(s string) (paths []string, rest string, err error) {
	if !strings.HasPrefix(s, "/") {
		return nil, s, nil
	}
	list, rest, ok := strings.Cut(s, ":")
	if !ok {
		return nil, "", fmt.Errorf("%q: a location's limit is PATH:LIMIT (want e.g. '/api/method/stock_balance:$host=4')", s)
	}
	for _, p := range strings.Split(list, ",") {
		if err := limit.CheckLocationPath(p); err != nil {
			return nil, "", fmt.Errorf("%q: %v", s, err)
		}
		paths = append(paths, p)
	}
	return paths, rest, nil
}

// AddLocationLimits adds conn and req to the location of cfg whose paths
// are paths, creating it at the end of cfg.Locations if there is none.
func AddLocationLimits(cfg *limit.Config, paths []string, conn []limit.ConnSpec, req []limit.ReqSpec) {
	for i := range cfg.Locations {
		if l := &cfg.Locations[i]; slices.Equal(l.Paths, paths) {
			l.Conn = append(l.Conn, conn...)
			l.Req = append(l.Req, req...)
			return
		}
	}
	cfg.Locations = append(cfg.Locations, limit.Location{Paths: slices.Clone(paths), Conn: conn, Req: req})
}
