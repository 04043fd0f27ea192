package workerpool

import (
	"fmt"
	"strings"
)

// Route is a path prefix and its service time; the longest matching prefix
// wins. Matching is by plain string prefix, as nginx matches a prefix
// location: "/slow" also matches "/slowly" and "/slow/x".
type Route struct {
	Name    string // reported in responses and stats; empty means Path
	Path    string // see CheckPath
	Service Dist   // must not be nil
}

// ReservedPrefix begins the paths a live backend answers itself, without a
// worker (its stats and its calibration wait): no route may begin with it.
const ReservedPrefix = "/_stampede/"

// CheckPath reports a path no route may have: one that is not a URL path
// from "/" (it has a space, a query or a fragment) or that is under
// ReservedPrefix.
func CheckPath(path string) error {
	switch {
	case !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " ?#\t\r\n"):
		return fmt.Errorf("%q is not a URL path (want e.g. /app)", path)
	case strings.HasPrefix(path, ReservedPrefix):
		return fmt.Errorf("%q is under %s, where the backend answers itself (want e.g. /app)", path, ReservedPrefix)
	}
	return nil
}
