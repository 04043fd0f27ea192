package limit

import (
	"fmt"
	"math"
	"strconv"
)

// Rate is a limit_req rate in nginx's unit, milli-requests per second.
type Rate int64

// NoDelay is the delay threshold, in milli-requests, that nodelay sets: so
// large that no excess ever reaches it (nginx uses its largest integer ÷ 1000,
// times 1000).
const NoDelay = math.MaxInt64 / 1000 * 1000

// ParseRate reads "10r/s" or "30r/m" with nginx's integer arithmetic
// (r/m is N·1000/60). Like nginx, a bare number ("10") means requests per
// second.
func ParseRate(s string) (Rate, error) {
	digits, scale := s, int64(1)
	if len(s) >= 3 {
		switch s[len(s)-3:] {
		case "r/s":
			digits = s[:len(s)-3]
		case "r/m":
			digits, scale = s[:len(s)-3], 60
		}
	}
	n, ok := atoi(digits)
	if !ok || n <= 0 {
		return 0, fmt.Errorf("%q is not a rate (want e.g. 10r/s or 30r/m, at least 1)", s)
	}
	if n > MaxRate {
		return 0, fmt.Errorf("rate %q is too large (at most %dr/s)", s, int64(MaxRate))
	}
	return Rate(n * 1000 / scale), nil
}

// String writes the rate in nginx syntax: "Nr/s" when it is a whole number
// per second, otherwise the smallest "Nr/m" that is at least r (exactly r
// for every rate ParseRate returns).
func (r Rate) String() string {
	switch {
	case r%1000 == 0:
		return strconv.FormatInt(int64(r)/1000, 10) + "r/s"
	default:
		// N r/m gives N·1000/60 rounded down; the smallest N that gives r.
		n := (int64(r)*60 + 999) / 1000
		return strconv.FormatInt(n, 10) + "r/m"
	}
}

// atoi reads a non-empty string of ASCII digits as nginx's ngx_atoi does: no
// sign, no spaces, no overflow.
func atoi(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}
