package h1

import (
	"bufio"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// bufferBeforeCommit is how much of a body the response holds back before
// it sends its header: a handler that writes no more is answered with a
// Content-Length, a longer one chunked (as net/http's 2 KiB).
const bufferBeforeCommit = 2 << 10

// response is the http.ResponseWriter of one request. Its header is
// written at the first flush of the body, when the handler returns or
// when the body outgrows bufferBeforeCommit; the header lines are taken as
// they stand at WriteHeader, as net/http does.
type response struct {
	c    *serverConn
	req  *http.Request
	body *requestBody // nil without a request body

	header      http.Header
	status      int
	wroteHeader bool
	committed   bool
	// From the handler's header at WriteHeader:
	contentLength int64 // declared Content-Length; -1 if none
	hasType       bool
	hasDate       bool
	closeAfter    bool // the connection closes after this response

	written  int64
	chunked  bool
	buf      []byte // the body held back before commit
	err      error  // a write to the connection failed
	bodyless bool   // the status or HEAD allows no body bytes on the wire
}

var (
	_ http.Flusher  = (*response)(nil)
	_ http.Hijacker = (*response)(nil)
)

// Hijack takes the connection over, as http.Hijacker's: what the response
// had flushed is sent, nothing more is written for it, and the server
// neither reads nor closes the connection again. The returned reader
// holds the bytes the client sent beyond the request.
func (w *response) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.committed && w.err == nil {
		w.c.bw.Flush()
	}
	conn, rw, err := w.c.hijack()
	if err == nil {
		w.err = http.ErrHijacked
	}
	return conn, rw, err
}

// SetReadDeadline sets the connection's read deadline, as
// http.ResponseController's: the handler's, for the request's body; the
// header deadline no longer applies.
func (w *response) SetReadDeadline(t time.Time) error {
	c := w.c
	c.mu.Lock()
	c.deadline = false
	c.mu.Unlock()
	return c.rwc.SetReadDeadline(t)
}

// SetWriteDeadline sets the connection's write deadline, as
// http.ResponseController's.
func (w *response) SetWriteDeadline(t time.Time) error { return w.c.rwc.SetWriteDeadline(t) }

func (w *response) Header() http.Header {
	if w.header == nil {
		// The connection's map, emptied: a handler must not touch its
		// header once it returned, and the next request's starts empty.
		c := w.c
		if c.header == nil {
			c.header = make(http.Header, 8)
		}
		clear(c.header)
		w.header = c.header
	}
	return w.header
}

// WriteHeader records the status and the header lines as they stand. A
// 1xx status other than 101 is sent at once, and the final one is still to
// come.
func (w *response) WriteHeader(code int) {
	if w.wroteHeader || w.err != nil {
		return
	}
	if code < 100 || code > 999 {
		panic("h1: invalid WriteHeader code " + strconv.Itoa(code))
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		c := w.c
		c.head = w.appendHeader(c.head[:0])
		c.bw.WriteString("HTTP/1.1 ")
		c.bw.Write(statusLine(code))
		c.bw.Write(c.head)
		c.bw.WriteString("\r\n")
		if err := c.bw.Flush(); err != nil {
			w.err = err
		}
		return
	}
	w.wroteHeader = true
	w.status = code
	w.c.head = w.appendHeader(w.c.head[:0])
	w.bodyless = w.req.Method == http.MethodHead || !allowsBody(code)
	w.buf = w.c.hold[:0]
}

// appendHeader appends the handler's header lines to b, in key order,
// leaving out what the response frames itself, and notes the fields the
// framing depends on.
func (w *response) appendHeader(b []byte) []byte {
	c := w.c
	c.keys = c.keys[:0]
	for k := range w.header {
		c.keys = append(c.keys, k)
	}
	slices.Sort(c.keys)
	for _, k := range c.keys {
		vv := w.header[k]
		switch k {
		case "Content-Length":
			if len(vv) > 0 {
				if n, err := strconv.ParseInt(vv[0], 10, 64); err == nil && n >= 0 {
					w.contentLength = n
				}
			}
			continue
		case "Transfer-Encoding":
			continue // the response frames its own body
		case "Connection":
			for _, v := range vv {
				if hasToken(v, "close") {
					w.closeAfter = true
				}
			}
			continue
		case "Content-Type":
			w.hasType = true
		case "Date":
			w.hasDate = true
		}
		if !validFieldName(k) {
			continue
		}
		for _, v := range vv {
			b = append(b, k...)
			b = append(b, ": "...)
			b = appendValue(b, v)
			b = append(b, "\r\n"...)
		}
	}
	return b
}

// appendValue appends v with CR and LF turned into spaces, as net/http
// does, so that a value cannot start a line of its own.
func appendValue(b []byte, v string) []byte {
	if !strings.ContainsAny(v, "\r\n") {
		return append(b, v...)
	}
	for i := 0; i < len(v); i++ {
		if v[i] == '\r' || v[i] == '\n' {
			b = append(b, ' ')
		} else {
			b = append(b, v[i])
		}
	}
	return b
}

func (w *response) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	if !allowsBody(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if w.contentLength >= 0 && w.written+int64(len(p)) > w.contentLength {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if !w.committed {
		if len(w.buf)+len(p) <= cap(w.buf) {
			w.buf = append(w.buf, p...)
			return len(p), nil
		}
		w.commit(false)
	}
	w.writeBody(p)
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

// WriteString writes s as Write does, without converting it.
func (w *response) WriteString(s string) (int, error) {
	if !w.committed && w.wroteHeader && w.err == nil && allowsBody(w.status) &&
		(w.contentLength < 0 || w.written+int64(len(s)) <= w.contentLength) &&
		len(w.buf)+len(s) <= cap(w.buf) {
		w.written += int64(len(s))
		w.buf = append(w.buf, s...)
		return len(s), nil
	}
	return w.Write([]byte(s))
}

// Flush sends the header and what the body holds so far.
func (w *response) Flush() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(false)
	}
	if w.err == nil {
		if err := w.c.bw.Flush(); err != nil {
			w.err = err
		}
	}
}

// writeBody writes p to the connection in the framing commit chose.
func (w *response) writeBody(p []byte) {
	if w.err != nil || w.bodyless || len(p) == 0 {
		return
	}
	bw := w.c.bw
	if w.chunked {
		var n [16]byte
		bw.Write(strconv.AppendUint(n[:0], uint64(len(p)), 16))
		bw.WriteString("\r\n")
		bw.Write(p)
		_, err := bw.WriteString("\r\n")
		w.err = err
		return
	}
	_, w.err = bw.Write(p)
}

// commit writes the status line and header, choosing the framing: the
// declared Content-Length, the whole body's length once the handler has
// returned (final), else chunked, or up to the close on HTTP/1.0. Then it
// writes the body held back.
func (w *response) commit(final bool) {
	w.committed = true
	if w.err != nil {
		return
	}
	c := w.c
	if w.body != nil && !w.body.discard() || c.srv.closed.Load() {
		w.closeAfter = true
	}
	bw := c.bw
	bw.WriteString("HTTP/1.1 ")
	bw.Write(statusLine(w.status))
	bw.Write(c.head)
	if !w.hasDate {
		bw.WriteString("Date: ")
		bw.Write(c.httpDate())
		bw.WriteString("\r\n")
	}
	if !w.hasType && len(w.buf) > 0 && allowsBody(w.status) {
		bw.WriteString("Content-Type: ")
		bw.WriteString(http.DetectContentType(w.buf))
		bw.WriteString("\r\n")
	}
	switch {
	case !allowsBody(w.status):
	case w.contentLength >= 0:
		writeContentLength(bw, w.contentLength)
	case final && (w.req.Method != http.MethodHead || w.written > 0):
		w.contentLength = w.written
		writeContentLength(bw, w.written)
	case w.req.Method == http.MethodHead:
	case w.req.ProtoAtLeast(1, 1):
		w.chunked = true
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	default:
		w.closeAfter = true // the body ends with the connection
	}
	switch {
	case w.closeAfter:
		bw.WriteString("Connection: close\r\n")
	case !w.req.ProtoAtLeast(1, 1):
		bw.WriteString("Connection: keep-alive\r\n")
	}
	_, err := bw.WriteString("\r\n")
	w.err = err
	w.writeBody(w.buf)
}

func writeContentLength(bw *bufio.Writer, n int64) {
	var b [32]byte
	bw.WriteString("Content-Length: ")
	bw.Write(strconv.AppendInt(b[:0], n, 10))
	bw.WriteString("\r\n")
}

// finish completes the response once the handler has returned.
func (w *response) finish() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(true)
	}
	if w.err != nil {
		return
	}
	if w.chunked {
		_, w.err = w.c.bw.WriteString("0\r\n\r\n")
	}
	if !w.bodyless && w.contentLength >= 0 && w.written < w.contentLength {
		w.closeAfter = true // the client waits for bytes that will not come
	}
}

// allowsBody reports whether a response with status may have a body.
func allowsBody(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// statusLines caches "200 OK\r\n" and the like.
var statusLines = func() map[int][]byte {
	m := map[int][]byte{}
	for code := 100; code < 600; code++ {
		if t := http.StatusText(code); t != "" {
			m[code] = []byte(strconv.Itoa(code) + " " + t + "\r\n")
		}
	}
	return m
}()

func statusLine(code int) []byte {
	if b, ok := statusLines[code]; ok {
		return b
	}
	return []byte(strconv.Itoa(code) + " status code " + strconv.Itoa(code) + "\r\n")
}

// httpDate returns the Date header's value for now, formatted once a
// second.
func (c *serverConn) httpDate() []byte {
	now := time.Now()
	if s := now.Unix(); s != c.dateSec {
		c.dateSec = s
		now.UTC().AppendFormat(c.date[:0], http.TimeFormat)
	}
	return c.date[:]
}
