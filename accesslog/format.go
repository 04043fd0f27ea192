// Package accesslog reads web server access logs by their own format: an
// nginx log_format (CompileNginx) or a gunicorn access_log_format
// (CompileGunicorn) is compiled into a Format whose Parse reads one line
// into an Entry without allocating, and a Reader streams a file of any size
// (gzip or not) through it in bounded memory, counting the lines that do
// not match and keeping the first few with what was expected.
package accesslog

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
)

// Unknown is the value of an Entry's durations that its line does not
// carry (the format has no such variable, or the log wrote "-").
const Unknown time.Duration = -1

// Entry is one parsed line. Its byte slices point into the line or the
// Format's scratch buffer and are valid until the next Parse with the same
// Format; copy what must outlive it.
type Entry struct {
	Host   []byte // $host, $server_name or $http_host (port and trailing dot stripped, lower case); nil when absent
	Addr   []byte // $remote_addr; nil when absent
	Method []byte
	Path   []byte // the request's path, query dropped, unescaped
	// End is when the server logged the request (Unix nanoseconds), which
	// nginx and gunicorn both do when it ends; 0 when the line has no time.
	End int64
	// Precision is how exact End is: a second for $time_local, a
	// millisecond for $msec.
	Precision time.Duration
	Status    int // 0 when absent
	// RequestTime is nginx's $request_time (from the first byte read to the
	// last byte sent) or gunicorn's request time (the worker's own time).
	RequestTime time.Duration
	// Upstream is the last of $upstream_response_time's values (the server
	// that answered); Tries is how many values the list had.
	Upstream        time.Duration
	Tries           int
	UpstreamStatus  int // last value; 0 when absent or "-"
	UpstreamConnect time.Duration
	UpstreamHeader  time.Duration
	BodyBytes       int64
}

// setTime sets End from a variable of the given precision, unless a more
// precise one set it already ($msec beside $time_local wins, in any order).
func (e *Entry) setTime(t int64, p time.Duration) {
	if e.Precision == 0 || p < e.Precision {
		e.End, e.Precision = t, p
	}
}

func (e *Entry) reset() {
	*e = Entry{RequestTime: Unknown, Upstream: Unknown, UpstreamConnect: Unknown, UpstreamHeader: Unknown}
}

// kind is how a variable's text is read and where it goes.
type kind uint8

const (
	kSkip         kind = iota // read and ignored
	kHost                     // Entry.Host
	kAddr                     // Entry.Addr
	kTimeLocal                // 02/Jan/2006:15:04:05 -0700
	kTimeBracket              // gunicorn's %(t)s: [02/Jan/2006:15:04:05 -0700]
	kTimeISO                  // 2006-01-02T15:04:05-07:00
	kMsec                     // 1764630278.123
	kRequest                  // "GET /path?q HTTP/1.1"
	kMethod                   // GET
	kURI                      // /path?q
	kStatus                   // 200
	kSeconds                  // 0.123 (request_time, gunicorn L)
	kMicros                   // gunicorn D
	kMillis                   // gunicorn M
	kWholeSeconds             // gunicorn T
	kUpstreamTime             // "0.1, 0.2 : 0.3" or "-"
	kUpstreamConnect
	kUpstreamHeader
	kUpstreamStatus
	kBytes // body bytes, "-" as 0
)

// want says what a kind's value looks like, for the message of a bad line.
var want = [...]string{
	kSkip:            "a value",
	kHost:            "a host",
	kAddr:            "an address",
	kTimeLocal:       "a time like 01/Dec/2026:23:04:38 +0000",
	kTimeBracket:     "a time like [01/Dec/2026:23:04:38 +0000]",
	kTimeISO:         "a time like 2026-12-01T23:04:38+00:00",
	kMsec:            "seconds since 1970 like 1764630278.123",
	kRequest:         `a request line like "GET /path HTTP/1.1"`,
	kMethod:          "a method like GET",
	kURI:             "a path like /app/item?x=1",
	kStatus:          "a status like 200",
	kSeconds:         "seconds like 0.123",
	kMicros:          "microseconds like 1234",
	kMillis:          "milliseconds like 12",
	kWholeSeconds:    "whole seconds like 3",
	kUpstreamTime:    `seconds like 0.123 (or a list "0.1, 0.2 : 0.3", or -)`,
	kUpstreamConnect: `seconds like 0.001 (or a list, or -)`,
	kUpstreamHeader:  `seconds like 0.120 (or a list, or -)`,
	kUpstreamStatus:  `a status like 200 (or a list, or -)`,
	kBytes:           "a byte count like 512",
}

// escaping is how the server escaped the values it wrote.
type escaping uint8

const (
	escDefault escaping = iota // nginx: " \ and bytes outside 0x20..0x7e as \xHH
	escJSON                    // nginx escape=json
	escNone                    // nginx escape=none, gunicorn
)

// segment is literal text, or one variable.
type segment struct {
	lit  []byte // literal text (when name is "")
	name string // the variable as the format wrote it, e.g. $request_time
	kind kind
}

// Format is a compiled log format, made by CompileNginx or
// CompileGunicorn; the zero Format is not usable. Parse is not safe for
// concurrent use (it reuses a scratch buffer and a cache); Clone gives
// another goroutine its own.
type Format struct {
	source  string // the format as given, for messages
	label   string // "log format" or "gunicorn log format", for messages
	segs    []segment
	esc     escaping
	has     map[kind]bool
	scratch []byte
	// The last $time_local read and its value: a log's lines share their
	// second by the hundreds.
	lastTime    [timeLocalLen]byte
	lastTimeVal int64
}

// Source returns the format as it was given.
func (f *Format) Source() string { return f.source }

// Has reports whether the format carries a variable of the given use:
// "host", "addr", "time" (any), "msec", "request_time", "upstream_time",
// "path", "status".
func (f *Format) Has(what string) bool {
	switch what {
	case "host":
		return f.has[kHost]
	case "addr":
		return f.has[kAddr]
	case "time":
		return f.has[kTimeLocal] || f.has[kTimeBracket] || f.has[kTimeISO] || f.has[kMsec]
	case "msec":
		return f.has[kMsec]
	case "request_time":
		return f.has[kSeconds] || f.has[kMicros] || f.has[kMillis] || f.has[kWholeSeconds]
	case "micros":
		return f.has[kMicros]
	case "upstream_time":
		return f.has[kUpstreamTime]
	case "path":
		return f.has[kRequest] || f.has[kURI]
	case "status":
		return f.has[kStatus]
	}
	return false
}

// Clone returns a Format with the same compiled form and its own scratch.
func (f *Format) Clone() *Format {
	c := *f
	c.scratch = nil
	return &c
}

// finish checks the segments and indexes what the format has.
func (f *Format) finish() error {
	f.has = map[kind]bool{}
	// Merge adjacent literals, so a value ends at the whole next literal.
	var segs []segment
	for _, s := range f.segs {
		if s.name == "" {
			if len(s.lit) == 0 {
				continue
			}
			if n := len(segs); n > 0 && segs[n-1].name == "" {
				segs[n-1].lit = append(segs[n-1].lit, s.lit...)
				continue
			}
		}
		segs = append(segs, s)
	}
	f.segs = segs
	for i, s := range segs {
		if s.name == "" {
			continue
		}
		f.has[s.kind] = true
		if i+1 < len(segs) && segs[i+1].name != "" && !fixedWidth(s.kind) {
			return fmt.Errorf("%s %q: %s and %s follow each other with nothing between them, so a line cannot say where one ends (put a space or a quote between them)", f.label, f.source, s.name, segs[i+1].name)
		}
	}
	if len(f.has) == 0 {
		return fmt.Errorf("%s %q: no variables", f.label, f.source)
	}
	return nil
}

// fixedWidth reports whether a kind's value ends by its own syntax.
func fixedWidth(k kind) bool {
	return k == kTimeLocal || k == kTimeBracket || k == kTimeISO
}

// LineError is a line that does not match its format: where, and what the
// format wanted there.
type LineError struct {
	Line int64  // 1-based line number within its file; 0 when unknown
	Col  int    // 1-based byte column
	Want string // what the format expected, e.g. "a status like 200 for $status"
	Text string // the line, cut to 200 bytes
}

func (e *LineError) Error() string {
	return fmt.Sprintf("line %d, column %d: want %s; the line is %q", e.Line, e.Col, e.Want, e.Text)
}

func lineErr(line []byte, col int, format string, args ...any) *LineError {
	t := line
	if len(t) > 200 {
		t = t[:200]
	}
	return &LineError{Col: col + 1, Want: fmt.Sprintf(format, args...), Text: string(t)}
}

// Parse reads line (without its newline) into e. A line that does not
// match the format gives a *LineError.
func (f *Format) Parse(line []byte, e *Entry) error {
	e.reset()
	f.scratch = f.scratch[:0]
	pos := 0
	for i := range f.segs {
		s := &f.segs[i]
		if s.name == "" {
			if len(s.lit) == 1 {
				if pos >= len(line) || line[pos] != s.lit[0] {
					return lineErr(line, pos, "%q", s.lit)
				}
			} else if !bytes.HasPrefix(line[pos:], s.lit) {
				return lineErr(line, pos, "%q", s.lit)
			}
			pos += len(s.lit)
			continue
		}
		var next []byte
		if i+1 < len(f.segs) {
			next = f.segs[i+1].lit
		}
		n, ok := f.value(line[pos:], next, s.kind, e)
		if !ok {
			return lineErr(line, pos, "%s for %s", want[s.kind], s.name)
		}
		pos += n
	}
	if pos != len(line) {
		return lineErr(line, pos, "the end of the line after the format's last part")
	}
	return nil
}

// find returns where the literal next begins in b (len(b) when next is
// empty: the value runs to the end of the line), skipping, under
// escape=json, quotes that are escaped.
func (f *Format) find(b, next []byte) int {
	if len(next) == 0 {
		return len(b)
	}
	off := 0
	for {
		var i int
		if len(next) == 1 {
			i = bytes.IndexByte(b[off:], next[0])
		} else {
			i = bytes.Index(b[off:], next)
		}
		if i < 0 {
			return -1
		}
		i += off
		if f.esc != escJSON || !escaped(b, i) {
			return i
		}
		off = i + 1
	}
}

// escaped reports whether b[i] follows an odd number of backslashes.
func escaped(b []byte, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && b[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// value reads one variable's value of kind k at the start of b, followed
// by the literal next, into e, and returns its length.
func (f *Format) value(b, next []byte, k kind, e *Entry) (int, bool) {
	switch k {
	case kTimeLocal:
		t, ok := f.timeLocal(b)
		if !ok {
			return 0, false
		}
		e.setTime(t, time.Second)
		return timeLocalLen, true
	case kTimeBracket:
		if len(b) < timeLocalLen+2 || b[0] != '[' || b[timeLocalLen+1] != ']' {
			return 0, false
		}
		t, ok := f.timeLocal(b[1:])
		if !ok {
			return 0, false
		}
		e.setTime(t, time.Second)
		return timeLocalLen + 2, true
	case kTimeISO:
		t, ok := parseTimeISO(b)
		if !ok {
			return 0, false
		}
		e.setTime(t, time.Second)
		return timeISOLen, true
	case kUpstreamTime, kUpstreamConnect, kUpstreamHeader, kUpstreamStatus:
		return upstreamList(b, k, e)
	}
	n := f.find(b, next)
	if n < 0 {
		return 0, false
	}
	v := b[:n]
	switch k {
	case kSkip:
	case kHost:
		e.Host = normalHost(f.unescape(v))
	case kAddr:
		e.Addr = f.unescape(v)
	case kMsec:
		ns, ok := parseDecimal(v, 9)
		if !ok {
			return 0, false
		}
		e.setTime(ns, time.Millisecond)
	case kRequest:
		m, rest, ok := bytes.Cut(v, []byte{' '})
		if !ok || len(m) == 0 {
			// nginx writes what the client sent, or "-"/"" for none: the
			// line matches, the request is unusable (no path).
			return n, true
		}
		uri := rest
		if j := bytes.LastIndexByte(rest, ' '); j >= 0 && bytes.HasPrefix(rest[j+1:], []byte("HTTP/")) {
			uri = rest[:j]
		}
		e.Method = m
		e.Path = f.path(uri)
	case kMethod:
		e.Method = v
	case kURI:
		e.Path = f.path(v)
	case kStatus:
		st, ok := parseStatus(v)
		if !ok {
			return 0, false
		}
		e.Status = st
	case kSeconds:
		d, ok := seconds(v)
		if !ok {
			return 0, false
		}
		e.RequestTime = d
	case kMicros, kMillis, kWholeSeconds:
		x, ok := parseUint(v)
		if !ok {
			return 0, false
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
			return 0, false
		}
		e.BodyBytes = int64(x)
	}
	return n, true
}

// path returns uri's path: the query dropped, escapes undone.
func (f *Format) path(uri []byte) []byte {
	if i := bytes.IndexByte(uri, '?'); i >= 0 {
		uri = uri[:i]
	}
	return f.unescape(uri)
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

// normalHost lower-cases h and strips a port and a trailing dot, as nginx
// does for $host. It lowers in place: h is the line's own bytes.
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
	for i, c := range h {
		if c >= 'A' && c <= 'Z' {
			h[i] = c + 'a' - 'A'
		}
	}
	return h
}

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
		case bytes.HasPrefix(b[pos:], []byte(", ")):
			pos += 2
		case bytes.HasPrefix(b[pos:], []byte(" : ")):
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
	if len(v) == 0 || len(v) > 30 {
		return 0, false
	}
	var x int64
	i := 0
	for ; i < len(v) && v[i] != '.'; i++ {
		c := v[i] - '0'
		if c > 9 || i == 10 {
			return 0, false
		}
		x = x*10 + int64(c)
	}
	if i == 0 || x > 9_000_000_000 {
		return 0, false
	}
	var frac int64
	digits := 0
	if i < len(v) {
		i++ // the point
		if i == len(v) {
			return 0, false
		}
		for ; i < len(v); i++ {
			c := v[i] - '0'
			if c > 9 {
				return 0, false
			}
			if digits < scale {
				frac = frac*10 + int64(c)
				digits++
			}
		}
	}
	return x*pow10[scale] + frac*pow10[scale-digits], true
}

var pow10 = [...]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

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

const (
	timeLocalLen = len("01/Dec/2026:23:04:38 +0000")
	timeISOLen   = len("2026-12-01T23:04:38+00:00")
)

var months = [12]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// timeLocal is parseTimeLocal through a cache of the last value.
func (f *Format) timeLocal(b []byte) (int64, bool) {
	if len(b) >= timeLocalLen && f.lastTimeVal != 0 && string(b[:timeLocalLen]) == string(f.lastTime[:]) {
		return f.lastTimeVal, true
	}
	t, ok := parseTimeLocal(b)
	if ok {
		copy(f.lastTime[:], b)
		f.lastTimeVal = t
	}
	return t, ok
}

// parseTimeLocal reads nginx's $time_local, 01/Dec/2026:23:04:38 +0000,
// as Unix nanoseconds.
func parseTimeLocal(b []byte) (int64, bool) {
	if len(b) < timeLocalLen || b[2] != '/' || b[6] != '/' || b[11] != ':' || b[14] != ':' || b[17] != ':' || b[20] != ' ' {
		return 0, false
	}
	day, ok1 := digits(b[0:2])
	year, ok2 := digits(b[7:11])
	hh, ok3 := digits(b[12:14])
	mm, ok4 := digits(b[15:17])
	ss, ok5 := digits(b[18:20])
	month := -1
	for i, m := range months {
		if string(b[3:6]) == m {
			month = i + 1
			break
		}
	}
	off, ok6 := zone(b[21:26], false)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 0 {
		return 0, false
	}
	return civil(year, month, day, hh, mm, ss, off)
}

// parseTimeISO reads nginx's $time_iso8601, 2026-12-01T23:04:38+00:00.
func parseTimeISO(b []byte) (int64, bool) {
	if len(b) < timeISOLen || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return 0, false
	}
	year, ok1 := digits(b[0:4])
	month, ok2 := digits(b[5:7])
	day, ok3 := digits(b[8:10])
	hh, ok4 := digits(b[11:13])
	mm, ok5 := digits(b[14:16])
	ss, ok6 := digits(b[17:19])
	off, ok7 := zone(b[19:25], true)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) {
		return 0, false
	}
	return civil(year, month, day, hh, mm, ss, off)
}

func digits(b []byte) (int, bool) {
	x := 0
	for _, c := range b {
		c -= '0'
		if c > 9 {
			return 0, false
		}
		x = x*10 + int(c)
	}
	return x, true
}

// zone reads +0100 (or +01:00 with colon) as seconds east of UTC.
func zone(b []byte, colon bool) (int, bool) {
	if b[0] != '+' && b[0] != '-' {
		return 0, false
	}
	h, ok1 := digits(b[1:3])
	mb := b[3:5]
	if colon {
		if b[3] != ':' {
			return 0, false
		}
		mb = b[4:6]
	}
	m, ok2 := digits(mb)
	off := (h*60 + m) * 60
	if b[0] == '-' {
		off = -off
	}
	return off, ok1 && ok2 && h < 24 && m < 60
}

// civil converts a date and time at a zone offset to Unix nanoseconds.
func civil(year, month, day, hh, mm, ss, off int) (int64, bool) {
	if month < 1 || month > 12 || day < 1 || day > 31 || hh > 23 || mm > 59 || ss > 60 || year < 1970 || year > 9999 {
		return 0, false
	}
	// Days from 1970-01-01 (Howard Hinnant's days_from_civil).
	y := year
	if month <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	mp := (month + 9) % 12
	doy := (153*mp+2)/5 + day - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	days := int64(era*146097+doe) - 719468
	secs := days*86400 + int64(hh*3600+mm*60+ss) - int64(off)
	return secs * int64(time.Second), true
}
