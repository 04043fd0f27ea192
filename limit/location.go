package limit

import (
	"fmt"
	"strconv"
	"strings"
)

// LocationPolicy is a compiled Location.
type LocationPolicy struct {
	Location Location
	// Policy holds the location's limits: its own rules, or the server's
	// (the very same rules and zones) for a kind it has none of.
	Policy *Policy
}

// compileLocations compiles cfg's locations, which Validate passed, onto
// the server policy p.
func (p *Policy) compileLocations(cfg Config) {
	for i, loc := range cfg.Locations {
		own := newRules(Config{Conn: loc.Conn, Req: loc.Req}, "locations["+strconv.Itoa(i)+"].")
		sub := &Policy{Conn: own.Conn, Req: own.Req}
		if len(loc.Conn) == 0 {
			sub.Conn = p.Conn
		}
		if len(loc.Req) == 0 {
			sub.Req = p.Req
		}
		sub.split()
		p.Locations = append(p.Locations, LocationPolicy{Location: loc, Policy: sub})
	}
}

// CheckLocationPath says whether nginx reads path as a prefix location
// the way stampede matches it: it starts with "/" and holds no space,
// control byte or character nginx's configuration syntax gives a meaning.
func CheckLocationPath(path string) error {
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("%q does not start with \"/\" (want a URI prefix, e.g. /api/method/stock_balance)", path)
	}
	if i := strings.IndexFunc(path, func(r rune) bool {
		return r <= ' ' || r == 0x7f || strings.ContainsRune(";{}\"'#\\$", r)
	}); i >= 0 {
		return fmt.Errorf("%q has %q at byte %d (want a plain URI prefix, e.g. /api/method/stock_balance)", path, path[i], i)
	}
	return nil
}

// For returns the policy of the location a request for path goes to:
// the longest matching prefix of all locations, or p itself, the server's
// limits, when none matches. path is the request's decoded path
// (URL.Path); it is normalized as nginx does before matching.
func (p *Policy) For(path string) *Policy {
	if len(p.Locations) == 0 {
		return p
	}
	i := p.LocationOf(path)
	if i < 0 {
		return p
	}
	return p.Locations[i].Policy
}

// LocationOf returns the index of the location a request for path goes
// to, or -1 for none (the server's limits).
func (p *Policy) LocationOf(path string) int {
	if len(p.Locations) == 0 {
		return -1
	}
	uri := normalizePath(path)
	best, bestLen := -1, -1
	for i := range p.Locations {
		for _, prefix := range p.Locations[i].Location.Paths {
			if len(prefix) > bestLen && strings.HasPrefix(uri, prefix) {
				best, bestLen = i, len(prefix)
			}
		}
	}
	return best
}

// normalizePath resolves a decoded path as nginx's URI parser does before
// it picks a location: runs of "/" merged (merge_slashes on), "." segments
// dropped and ".." segments taking the previous one with them; a path that
// climbs above the root stays at it. The trailing "/" is kept.
func normalizePath(path string) string {
	if path == "" {
		return "/"
	}
	if !strings.Contains(path, "//") && !strings.Contains(path, "/.") && path[0] == '/' {
		return path
	}
	segs := strings.Split(path, "/")
	out := make([]string, 0, len(segs))
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case "":
			if last {
				out = append(out, "")
			}
			continue
		case ".":
			if last {
				out = append(out, "")
			}
			continue
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
			continue
		}
		out = append(out, s)
	}
	return "/" + strings.Join(out, "/")
}
