package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httputil"
	"strconv"
	"time"
)

// errMalformed is wrapped by the error of an answer Get cannot parse.
var errMalformed = errors.New("h1: malformed answer")

// Get sends a GET for uri (a request target: path and query) with Host
// host, and reads the answer: it returns the status and calls header, when
// not nil, with each header field's name and value (valid only during the
// call), and reads the body to its end without keeping it, as a load
// generator needs. It is RoundTrip's exchange without an http.Request and
// an http.Response: no allocation per request but the context's. A 1xx
// answer is skipped. ctx's end aborts the exchange at once and closes its
// connection.
func (l *Client) Get(ctx context.Context, uri, host string, header func(name, value []byte)) (int, error) {
	return l.GetBy(ctx, time.Time{}, uri, host, header)
}

// GetBy is Get with the exchange bounded by deadline, dial included; zero
// means none. An exchange that runs out of it fails with an error that is
// os.ErrDeadlineExceeded. Unlike a context with a deadline, it costs no
// timer and no registration per request: the deadline is the
// connection's.
func (l *Client) GetBy(ctx context.Context, deadline time.Time, uri, host string, header func(name, value []byte)) (int, error) {
	var status int
	err := l.attempt(ctx, deadline, func(c *conn) (bool, error) {
		st, started, err := l.getOn(ctx, c, deadline, uri, host, header)
		status = st
		return started, err
	})
	return status, err
}

func (l *Client) getOn(ctx context.Context, c *conn, deadline time.Time, uri, host string, header func(name, value []byte)) (int, bool, error) {
	bw := c.bw
	bw.WriteString("GET ")
	bw.WriteString(uri)
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(host)
	bw.WriteString("\r\nUser-Agent: Go-http-client/1.1\r\n\r\n")
	if err := l.begin(c, deadline); err != nil {
		return 0, false, err
	}
	for {
		a, err := readHead(c.br, header)
		if err != nil {
			return 0, true, err
		}
		if a.status >= 200 || a.status == 101 {
			if err := discardBody(c.br, a); err != nil {
				return 0, true, err
			}
			return a.status, true, l.end(ctx, c, !a.close && a.status != 101)
		}
	}
}

// head is what readHead takes from an answer's head.
type head struct {
	status  int
	length  int64 // -1: not given
	chunked bool
	close   bool // the connection ends after this answer
}

// readHead reads an answer's status line and header fields.
func readHead(br *bufio.Reader, header func(name, value []byte)) (head, error) {
	h := head{length: -1}
	line, err := readLine(br)
	if err != nil {
		return h, err
	}
	// HTTP/1.x SP 3DIGIT [SP reason]
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return h, fmt.Errorf("%w: status line %q", errMalformed, line)
	}
	// HTTP/1.0 keeps the connection only when asked to.
	v10 := line[7] == '0'
	closing, keep := false, false
	st, err := strconv.Atoi(string(line[9:12]))
	if err != nil || st < 100 || len(line) > 12 && line[12] != ' ' {
		return h, fmt.Errorf("%w: status line %q", errMalformed, line)
	}
	h.status = st
	for {
		line, err := readLine(br)
		if err != nil {
			return h, err
		}
		if len(line) == 0 {
			break
		}
		i := bytes.IndexByte(line, ':')
		if i <= 0 {
			return h, fmt.Errorf("%w: header line %q", errMalformed, line)
		}
		name, value := line[:i], bytes.TrimSpace(line[i+1:])
		switch {
		case asciiEqualFold(name, "Content-Length"):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 {
				return h, fmt.Errorf("%w: Content-Length %q", errMalformed, value)
			}
			h.length = n
		case asciiEqualFold(name, "Transfer-Encoding"):
			h.chunked = asciiEqualFold(value, "chunked")
		case asciiEqualFold(name, "Connection"):
			switch {
			case asciiEqualFold(value, "close"):
				closing = true
			case asciiEqualFold(value, "keep-alive"):
				keep = true
			}
		}
		if header != nil {
			header(name, value)
		}
	}
	if h.chunked {
		h.length = -1
	}
	// Without a length the body runs to the connection's end.
	h.close = closing || v10 && !keep || !h.chunked && h.length < 0 && bodyAllowed(h.status)
	return h, nil
}

// readLine returns the next line without its CRLF (or LF), valid until the
// next read.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, fmt.Errorf("%w: a head line over %d bytes", errMalformed, br.Size())
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// discardBody reads the body of an answer with head a to its end.
func discardBody(br *bufio.Reader, a head) error {
	switch {
	case !bodyAllowed(a.status):
		return nil
	case a.chunked:
		_, err := io.Copy(io.Discard, httputil.NewChunkedReader(br))
		if err != nil {
			return err
		}
		// Trailer fields, then the empty line.
		for {
			line, err := readLine(br)
			if err != nil {
				return err
			}
			if len(line) == 0 {
				return nil
			}
		}
	case a.length >= 0:
		_, err := br.Discard(int(a.length))
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	default:
		// No length: the body runs to the connection's end.
		_, err := io.Copy(io.Discard, br)
		return err
	}
}

// bodyAllowed reports whether an answer of status st may have a body.
func bodyAllowed(st int) bool { return st >= 200 && st != 204 && st != 304 }

// asciiEqualFold reports whether b is s, ignoring ASCII case.
func asciiEqualFold[T []byte | string](b T, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
