package limiterproxy

import (
	"fmt"
	"math"
	"strconv"
)

// maxRateN bounds the N of "Nr/s" so that N·1000 and the leaky-bucket
// arithmetic on it cannot overflow an int64.
const maxRateN = 1_000_000_000_000

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
	if n > maxRateN {
		return 0, fmt.Errorf("rate %q is too large (at most %dr/s)", s, int64(maxRateN))
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

// ParseSize reads a zone size as nginx does: bytes, or with k or m (e.g. "10m").
// K and M are accepted too; both mean powers of 1024.
func ParseSize(s string) (int64, error) {
	digits, scale := s, int64(1)
	if s != "" {
		switch s[len(s)-1] {
		case 'k', 'K':
			digits, scale = s[:len(s)-1], 1024
		case 'm', 'M':
			digits, scale = s[:len(s)-1], 1024*1024
		}
	}
	n, ok := atoi(digits)
	if !ok || n > math.MaxInt64/scale {
		return 0, fmt.Errorf("%q is not a size (want bytes, or a number with k or m, e.g. 10m)", s)
	}
	return n * scale, nil
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

// Zone memory model.
//
// nginx keeps limit_conn and limit_req state in a shared-memory slab pool.
// The model here counts bytes the same way, closely enough that "10m" holds
// about as many keys as it does in nginx:
//
//   - the pool is split into 4 KiB pages, each with a 24-byte descriptor, and
//     one page goes to the pool's own bookkeeping;
//   - a limit_conn node is a 32-byte red-black tree node head, 4 bytes of
//     counters and the key; a limit_req node is the same head, 48 bytes of
//     state and the key;
//   - the slab allocator rounds a node up to a power of two (at least 8),
//     and anything over half a page up to whole pages.
//
// So a limit_conn node for a key of up to 28 bytes costs 64 bytes and 10m
// holds about 162,000 of them; a limit_req node for a key of up to 48 bytes
// costs 128 bytes and 10m holds about 81,000. Fragmentation between node
// sizes is not modelled.
const (
	pageSize       = 4096
	pageDescriptor = 24
	connNodeHead   = 32 + 4
	reqNodeHead    = 32 + 48
	// MinZone is the smallest zone nginx accepts: 8 pages.
	MinZone = 8 * pageSize
)

// zoneBudget is how many bytes of nodes a zone of size bytes can hold.
func zoneBudget(size int64) int64 {
	pages := size/(pageSize+pageDescriptor) - 1
	if pages < 1 {
		pages = 1
	}
	return pages * pageSize
}

// nodeCost is what the slab allocator spends on a node of n bytes.
func nodeCost(n int) int64 {
	if n > pageSize/2 {
		return int64((n + pageSize - 1) / pageSize * pageSize)
	}
	c := 8
	for c < n {
		c <<= 1
	}
	return int64(c)
}
