package accesslog

import (
	"bytes"
	"strconv"
	"time"
)

// Parse reads line (without its newline) into e. A line that does not
// match the format gives a *LineError.
func (f *Format) Parse(line []byte, e *Entry) error {
	e.reset()
	f.scratch = f.scratch[:0]
	if !hasLit(line, f.lead) {
		return lineErr(line, 0, "%q", f.lead)
	}
	pos, bad, ok := f.fieldsAt(line, len(f.lead), e)
	switch {
	case bad == nil && pos != len(line):
		return lineErr(line, pos, "the end of the line after the format's last part")
	case bad == nil:
		return nil
	case ok:
		return lineErr(line, pos, "%q", bad.next)
	}
	return lineErr(line, pos, "%s for %s", want[bad.kind], bad.name)
}

// fieldsAt reads the fields from line[pos:] into e, and returns where they
// end; or where a field's value, or with ok its literal, does not match,
// and the field. The loop and the reading of values are one function: a
// call for each field costs a line more than most values do.
func (f *Format) fieldsAt(line []byte, pos int, e *Entry) (int, *field, bool) {
	for i := range f.fields {
		fd := &f.fields[i]
		k := fd.kind
		b := line[pos:]
		if fd.own {
			n, ok := f.ownValue(b, k, e)
			if !ok {
				return pos, fd, false
			}
			if !hasLit(b[n:], fd.next) {
				return pos + n, fd, true
			}
			pos += n + len(fd.next)
			continue
		}
		if fd.run && (k == kMsec || k == kSeconds) {
			// The decimal read as its run of bytes is scanned: in one pass.
			x, n, ok := decimalPrefix(b, 9)
			if k == kSeconds && len(b) > 0 && b[0] == '-' {
				x, n, ok = int64(Unknown), 1, true
			}
			if !ok || n < len(b) && numeric[b[n]] || !hasLit(b[n:], fd.next) {
				return pos, fd, false
			}
			if k == kMsec {
				e.setTime(x, time.Millisecond)
			} else {
				e.RequestTime = time.Duration(x)
			}
			pos += n + len(fd.next)
			continue
		}
		var n int
		if fd.run {
			for n < len(b) && numeric[b[n]] {
				n++
			}
			if !hasLit(b[n:], fd.next) {
				return pos, fd, false
			}
		} else if len(fd.next) == 0 {
			n = len(b)
		} else if n = bytes.IndexByte(b, fd.next[0]); n < 0 {
			return pos, fd, false
		} else if !hasLit(b[n+1:], fd.next[1:]) || f.esc == escJSON && escaped(b, n) {
			// Not the literal, or a quote escaped: search on.
			if n = f.find(b, fd.next); n < 0 {
				return pos, fd, false
			}
		}
		v := b[:n]
		switch k {
		case kSkip:
		case kHost:
			e.Host = f.host(v)
		case kAddr:
			e.Addr = f.unescape(v)
		case kMsec:
			ns, ok := parseDecimal(v, 9)
			if !ok {
				return pos, fd, false
			}
			e.setTime(ns, time.Millisecond)
		case kRequest:
			f.request(v, e)
		case kMethod:
			e.Method = v
		case kURI:
			e.Path = f.path(v)
		case kStatus:
			st, ok := parseStatus(v)
			if !ok {
				return pos, fd, false
			}
			e.Status = st
		case kSeconds:
			d, ok := seconds(v)
			if !ok {
				return pos, fd, false
			}
			e.RequestTime = d
		case kMicros, kMillis, kWholeSeconds:
			x, ok := parseUint(v)
			if !ok {
				return pos, fd, false
			}
			unit := time.Second
			switch k {
			case kMicros:
				unit = time.Microsecond
			case kMillis:
				unit = time.Millisecond
			}
			e.RequestTime = time.Duration(x) * unit
		case kBytes:
			if len(v) == 1 && v[0] == '-' {
				break
			}
			x, ok := parseUint(v)
			if !ok {
				return pos, fd, false
			}
			e.BodyBytes = int64(x)
		}
		pos += n + len(fd.next)
	}
	return pos, nil, false
}

// ownValue reads a value that ends by its own syntax, and returns its
// length.
func (f *Format) ownValue(b []byte, k kind, e *Entry) (int, bool) {
	var t int64
	var ok bool
	n := timeLocalLen
	switch k {
	case kTimeLocal:
		t, ok = f.local.get(b, timeLocalLen, parseTimeLocal)
	case kTimeBracket:
		if len(b) >= timeLocalLen+2 && b[0] == '[' && b[timeLocalLen+1] == ']' {
			t, ok = f.local.get(b[1:], timeLocalLen, parseTimeLocal)
			n += 2
		}
	case kTimeISO:
		t, ok = f.iso.get(b, timeISOLen, parseTimeISO)
		n = timeISOLen
	default:
		return upstreamList(b, k, e)
	}
	if !ok {
		return 0, false
	}
	e.setTime(t, time.Second)
	return n, true
}

// find returns where the literal next begins in b (len(b) when next is
// empty: the value runs to the end of the line), skipping, under
// escape=json, quotes that are escaped.
func (f *Format) find(b, next []byte) int {
	if len(next) == 0 {
		return len(b)
	}
	c, rest := next[0], next[1:]
	off := 0
	for {
		i := bytes.IndexByte(b[off:], c)
		if i < 0 {
			return -1
		}
		i += off
		if hasLit(b[i+1:], rest) && (f.esc != escJSON || !escaped(b, i)) {
			return i
		}
		off = i + 1
	}
}

// hasLit reports whether b begins with lit: bytes.HasPrefix for the
// short literals of a format, without a call.
func hasLit(b, lit []byte) bool {
	if len(b) < len(lit) {
		return false
	}
	for i, c := range lit {
		if b[i] != c {
			return false
		}
	}
	return true
}

// escaped reports whether b[i] follows an odd number of backslashes.
func escaped(b []byte, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && b[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// request reads a request line, "GET /path?q HTTP/1.1", into e's method
// and path. nginx writes what the client sent, or "-" or "" for none: the
// line matches, and the request, without a path, is unusable.
func (f *Format) request(v []byte, e *Entry) {
	sp := bytes.IndexByte(v, ' ')
	if sp <= 0 {
		return
	}
	uri := v[sp+1:]
	if j := bytes.LastIndexByte(uri, ' '); j >= 0 && bytes.HasPrefix(uri[j+1:], []byte("HTTP/")) {
		uri = uri[:j]
	}
	e.Method = v[:sp]
	e.Path = f.path(uri)
}

// path returns uri's path: the query dropped, escapes undone.
func (f *Format) path(uri []byte) []byte {
	if i := bytes.IndexByte(uri, '?'); i >= 0 {
		uri = uri[:i]
	}
	return f.unescape(uri)
}

// host reads a host as nginx's $host is: lower case, without a port or a
// trailing dot. It lowers in place: v is the line's own bytes.
func (f *Format) host(v []byte) []byte {
	colons, last, upper := 0, -1, false
	for i, c := range v {
		if !hostByte[c] {
			continue
		}
		switch {
		case c == ':':
			colons, last = colons+1, i
		case c == '\\':
			return normalHost(f.unescape(v))
		default:
			upper = true
		}
	}
	if len(v) == 1 && v[0] == '-' {
		return nil
	}
	if colons == 1 && v[0] != '[' {
		v = v[:last]
	}
	if len(v) > 0 && v[len(v)-1] == '.' {
		v = v[:len(v)-1]
	}
	if upper {
		lower(v)
	}
	return v
}

// hostByte marks the bytes of a host that host must look at: a colon, a
// backslash, upper case.
var hostByte = func() (t [256]bool) {
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	t[':'], t['\\'] = true, true
	return t
}()

// normalHost lower-cases h and strips a port and a trailing dot, as nginx
// does for $host.
func normalHost(h []byte) []byte {
	if len(h) == 1 && h[0] == '-' {
		return nil
	}
	if len(h) > 0 && h[0] != '[' {
		if i := bytes.LastIndexByte(h, ':'); i >= 0 && bytes.IndexByte(h[:i], ':') < 0 {
			h = h[:i]
		}
	}
	h = bytes.TrimSuffix(h, []byte{'.'})
	lower(h)
	return h
}

func lower(h []byte) {
	for i, c := range h {
		if c >= 'A' && c <= 'Z' {
			h[i] = c + 'a' - 'A'
		}
	}
}

// unescape undoes the server's escaping of v, into the scratch buffer when
// there is any.
func (f *Format) unescape(v []byte) []byte {
	if f.esc == escNone || bytes.IndexByte(v, '\\') < 0 {
		return v
	}
	start := len(f.scratch)
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '\\' || i+1 >= len(v) {
			f.scratch = append(f.scratch, c)
			continue
		}
		switch {
		case v[i+1] == 'x' && i+3 < len(v) && f.esc == escDefault:
			if h, ok := hexByte(v[i+2], v[i+3]); ok {
				f.scratch = append(f.scratch, h)
				i += 3
				continue
			}
			f.scratch = append(f.scratch, c)
		case f.esc == escJSON:
			i++
			switch v[i] {
			case 'n':
				f.scratch = append(f.scratch, '\n')
			case 'r':
				f.scratch = append(f.scratch, '\r')
			case 't':
				f.scratch = append(f.scratch, '\t')
			case 'b':
				f.scratch = append(f.scratch, '\b')
			case 'f':
				f.scratch = append(f.scratch, '\f')
			case 'u':
				if i+4 < len(v) {
					if x, err := strconv.ParseUint(string(v[i+1:i+5]), 16, 16); err == nil {
						f.scratch = append(f.scratch, []byte(string(rune(x)))...)
						i += 4
						continue
					}
				}
				f.scratch = append(f.scratch, '\\', 'u')
			default:
				f.scratch = append(f.scratch, v[i])
			}
		default:
			f.scratch = append(f.scratch, c)
		}
	}
	return f.scratch[start:]
}

func hexByte(a, b byte) (byte, bool) {
	x, ok1 := hexDigit(a)
	y, ok2 := hexDigit(b)
	return x<<4 | y, ok1 && ok2
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
