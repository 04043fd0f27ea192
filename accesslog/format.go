package accesslog

import (
	"fmt"
)

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

// ownEnd reports whether a kind's value ends by its own syntax (a time's
// fixed width, an upstream list's separators), not where the next literal
// begins.
func ownEnd(k kind) bool {
	return fixedWidth(k) || k == kUpstreamTime || k == kUpstreamConnect || k == kUpstreamHeader || k == kUpstreamStatus
}

// fixedWidth reports whether a kind's value has a fixed width, so that
// another variable may follow it with nothing between them.
func fixedWidth(k kind) bool {
	return k == kTimeLocal || k == kTimeBracket || k == kTimeISO
}

// numeric are the bytes a number of any numeric kind is made of: a value
// of such a kind holds none other.
var numeric = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	t['.'], t['-'] = true, true
	return t
}()

func isNumeric(k kind) bool {
	switch k {
	case kMsec, kStatus, kSeconds, kMicros, kMillis, kWholeSeconds, kBytes:
		return true
	}
	return false
}

// escaping is how the server escaped the values it wrote.
type escaping uint8

const (
	escDefault escaping = iota // nginx: " \ and bytes outside 0x20..0x7e as \xHH
	escJSON                    // nginx escape=json
	escNone                    // nginx escape=none, gunicorn
)

// segment is literal text, or one variable, as the format is written.
type segment struct {
	lit  []byte // literal text (when name is "")
	name string // the variable as the format wrote it, e.g. $request_time
	kind kind
}

// field is one variable of a compiled format with the literal that
// follows it: a line is the format's lead, then each field's value and
// literal in turn.
type field struct {
	kind kind
	name string
	next []byte // the literal after the value; empty before another variable or the end of the line
	// own: the value ends by its own syntax (ownEnd), and a line without
	// next after it is wrong at next, not at the value.
	own bool
	// run: the value is the run of numeric bytes, and next must follow it
	// (next begins with a byte no number has, so that this finds the same
	// end as searching for next would, without the search).
	run bool
}

// Format is a compiled log format, made by CompileNginx or
// CompileGunicorn; the zero Format is not usable. Parse is not safe for
// concurrent use (it reuses a scratch buffer and a cache); Clone gives
// another goroutine its own.
type Format struct {
	source     string // the format as given, for messages
	label      string // "log format" or "gunicorn log format", for messages
	segs       []segment
	lead       []byte // the literal before the first variable
	fields     []field
	esc        escaping
	has        uint32 // bit k: the format has a variable of kind k
	scratch    []byte
	local, iso timeCache // of $time_local (and %(t)s), of $time_iso8601
}

// Source returns the format as it was given.
func (f *Format) Source() string { return f.source }

func (f *Format) hasKind(ks ...kind) bool {
	for _, k := range ks {
		if f.has&(1<<k) != 0 {
			return true
		}
	}
	return false
}

// Has reports whether the format carries a variable of the given use:
// "host", "addr", "time" (any), "msec", "request_time", "micros",
// "upstream_time", "path", "status".
func (f *Format) Has(what string) bool {
	switch what {
	case "host":
		return f.hasKind(kHost)
	case "addr":
		return f.hasKind(kAddr)
	case "time":
		return f.hasKind(kTimeLocal, kTimeBracket, kTimeISO, kMsec)
	case "msec":
		return f.hasKind(kMsec)
	case "request_time":
		return f.hasKind(kSeconds, kMicros, kMillis, kWholeSeconds)
	case "micros":
		return f.hasKind(kMicros)
	case "upstream_time":
		return f.hasKind(kUpstreamTime)
	case "path":
		return f.hasKind(kRequest, kURI)
	case "status":
		return f.hasKind(kStatus)
	}
	return false
}

// Clone returns a Format with the same compiled form and its own scratch.
func (f *Format) Clone() *Format {
	c := *f
	c.scratch = nil
	return &c
}

// finish checks the segments, indexes what the format has and compiles
// the segments into the lead and fields Parse reads by.
func (f *Format) finish() error {
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
	f.lead, f.fields, f.has = nil, nil, 0
	for i, s := range segs {
		if s.name == "" {
			if i == 0 {
				f.lead = s.lit
			}
			continue
		}
		f.has |= 1 << s.kind
		fd := field{kind: s.kind, name: s.name}
		if i+1 < len(segs) {
			if segs[i+1].name != "" && !fixedWidth(s.kind) {
				return fmt.Errorf("%s %q: %s and %s follow each other with nothing between them, so a line cannot say where one ends (put a space or a quote between them)", f.label, f.source, s.name, segs[i+1].name)
			}
			fd.next = segs[i+1].lit
		}
		fd.own = ownEnd(s.kind)
		fd.run = isNumeric(s.kind) && len(fd.next) > 0 && !numeric[fd.next[0]]
		f.fields = append(f.fields, fd)
	}
	if f.has == 0 {
		return fmt.Errorf("%s %q: no variables", f.label, f.source)
	}
	return nil
}
