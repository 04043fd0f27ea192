package accesslog

import (
	"fmt"
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
