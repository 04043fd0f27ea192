package fakebackend

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// AccessLog writes a Backend's served requests in gunicorn's access-log
// format with the worker's own time and the Host header, the format
// accesslog.GunicornWorkerTime reads:
//
//	%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s" %(D)s "%({host}i)s"
//
// Times are wall times, as gunicorn writes them: %(D)s is the microseconds
// from when a worker took the request to when its answer was written, so a
// time-scaled run writes its durations scaled (stampede import
// --log-time-scale undoes it). As gunicorn, it writes no line for a request
// whose worker was killed or whose connection the backlog refused. It is
// safe for concurrent use; lines are written within about a second, and
// Flush writes what is buffered. NewAccessLog makes one; the zero AccessLog
// is not usable, and a nil *AccessLog (Options.AccessLog unset) writes
// nothing.
type AccessLog struct {
	mu   sync.Mutex
	w    *bufio.Writer
	buf  []byte
	err  error
	last time.Time // of the last flush
}

// NewAccessLog returns an AccessLog writing to w.
func NewAccessLog(w io.Writer) *AccessLog {
	return &AccessLog{w: bufio.NewWriterSize(w, 64<<10)}
}

// Flush writes what is buffered and returns the first write error.
func (l *AccessLog) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = l.w.Flush()
	}
	return l.err
}

// logServed writes the line of a request a worker took at start (wall
// time) and answered with status and size bytes now. A nil AccessLog
// writes nothing.
func (l *AccessLog) logServed(r *http.Request, start time.Time, status, size int) {
	if l == nil {
		return
	}
	end := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buf[:0]
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	b = append(b, orDash(host)...)
	b = append(b, " - - ["...)
	b = end.AppendFormat(b, "02/Jan/2006:15:04:05 -0700")
	b = append(b, "] \""...)
	b = append(b, r.Method...)
	b = append(b, ' ')
	b = append(b, r.RequestURI...)
	b = append(b, ' ')
	b = append(b, r.Proto...)
	b = append(b, "\" "...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(size), 10)
	b = append(b, " \""...)
	b = append(b, orDash(r.Referer())...)
	b = append(b, "\" \""...)
	b = append(b, orDash(r.UserAgent())...)
	b = append(b, "\" "...)
	b = strconv.AppendInt(b, int64(max(end.Sub(start), 0)/time.Microsecond), 10)
	b = append(b, " \""...)
	b = append(b, orDash(r.Host)...)
	b = append(b, "\"\n"...)
	l.buf = b
	if l.err == nil {
		_, l.err = l.w.Write(b)
	}
	// A second's lines at most wait in the buffer, so the file can be
	// followed while the backend runs.
	if l.err == nil && end.Sub(l.last) >= time.Second {
		l.last = end
		l.err = l.w.Flush()
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
