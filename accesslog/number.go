package accesslog

import "time"

// upstreamList reads nginx's list of upstream values: "0.1", "0.1, 0.2",
// "0.1 : 0.2" or "-" entries, and keeps the last one.
func upstreamList(b []byte, k kind, e *Entry) (int, bool) {
	pos, tries := 0, 0
	last := -1
	lastDash := false
	for {
		j := pos
		for j < len(b) && b[j] != ',' && b[j] != ' ' && b[j] != '"' {
			j++
		}
		v := b[pos:j]
		if len(v) == 0 {
			return 0, false
		}
		tries++
		lastDash = len(v) == 1 && v[0] == '-'
		if !lastDash {
			if k == kUpstreamStatus {
				st, ok := parseStatus(v)
				if !ok {
					return 0, false
				}
				last = st
			} else {
				d, ok := seconds(v)
				if !ok {
					return 0, false
				}
				last = int(d)
			}
		}
		pos = j
		switch {
		case pos+1 < len(b) && b[pos] == ',' && b[pos+1] == ' ':
			pos += 2
		case pos+2 < len(b) && b[pos] == ' ' && b[pos+1] == ':' && b[pos+2] == ' ':
			pos += 3
		default:
			if lastDash {
				last = -1
			}
			switch k {
			case kUpstreamTime:
				if last >= 0 {
					e.Upstream = time.Duration(last)
				}
				e.Tries = tries
			case kUpstreamConnect:
				if last >= 0 {
					e.UpstreamConnect = time.Duration(last)
				}
			case kUpstreamHeader:
				if last >= 0 {
					e.UpstreamHeader = time.Duration(last)
				}
			case kUpstreamStatus:
				e.UpstreamStatus = max(last, 0)
			}
			return pos, true
		}
	}
}

// seconds reads nginx's seconds with up to millisecond digits ("0.123"),
// or "-" as Unknown.
func seconds(v []byte) (time.Duration, bool) {
	if len(v) == 1 && v[0] == '-' {
		return Unknown, true
	}
	ns, ok := parseDecimal(v, 9)
	return time.Duration(ns), ok
}

// parseDecimal reads "123.456" as an integer scaled by 10^scale (at most
// 9), without floating point. The integer part may have ten digits and be
// at most 9e9, which keeps every result within int64 and takes in Unix
// seconds until the year 2255.
func parseDecimal(v []byte, scale int) (int64, bool) {
	x, n, ok := decimalPrefix(v, scale)
	return x, ok && n == len(v)
}

// decimalPrefix reads the decimal at the start of b as parseDecimal does,
// and returns its length: where its digits end, which is where a value
// made of them alone must end.
func decimalPrefix(b []byte, scale int) (int64, int, bool) {
	var x int64
	i := 0
	for ; i < len(b); i++ {
		c := b[i] - '0'
		if c > 9 {
			break
		}
		x = x*10 + int64(c)
	}
	if i == 0 || i > 10 || x > 9_000_000_000 {
		return 0, i, false
	}
	if i == len(b) || b[i] != '.' {
		return x * pow10[scale], i, true
	}
	i++ // the point
	var frac int64
	start := i
	for ; i < len(b); i++ {
		c := b[i] - '0'
		if c > 9 {
			break
		}
		if i-start < scale {
			frac = frac*10 + int64(c)
		}
	}
	digits := min(i-start, scale)
	return x*pow10[scale] + frac*pow10[scale-digits], i, i > start && i <= 30
}

var pow10 = [...]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// parseUint reads 1 to 18 decimal digits.
func parseUint(v []byte) (uint64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var x uint64
	for _, c := range v {
		c -= '0'
		if c > 9 {
			return 0, false
		}
		x = x*10 + uint64(c)
	}
	return x, true
}

func parseStatus(v []byte) (int, bool) {
	if len(v) != 3 {
		return 0, false
	}
	x, ok := parseUint(v)
	return int(x), ok && x >= 100
}
