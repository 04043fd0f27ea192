package limiterproxy

import (
	"bytes"
	"strconv"
	"sync"

	"stampede/internal/h1"
)

// reqScan follows the bytes a server reads from one client connection and
// notes, for each request's header block, what nginx refuses but Go's
// parser accepts or normalises away before a handler sees it: a header
// folded onto a second line, how many Content-Length, Transfer-Encoding
// and Host headers there were, an empty Host, and HTTP/1.0. It skips a
// body of known length; after a chunked body, or once stopped (an
// upgrade), it stops noting and next reports false from then on.
//
// The zero value is ready to use. It is safe for concurrent use: the
// server reads from its own goroutine and from a background one.
type reqScan struct {
	mu    sync.Mutex
	off   bool
	skip  int64 // body bytes to pass over before the next request
	line  [scanLine]byte
	n     int    // bytes of the current line, of which line holds scanLine
	lines int    // lines of the current block so far (the request line is 1)
	tail  uint64 // the request line's last 8 bytes, for its version
	cur   rawBlock
	done  []rawBlock // blocks seen, not yet taken by next
}

// scanLine is how much of a header line reqScan keeps: enough for the
// names it looks for and a Content-Length's digits.
const scanLine = 64

// maxScanAhead bounds the blocks a connection's reader may be ahead of its
// handlers (pipelining); past it, reqScan stops.
const maxScanAhead = 16

// rawBlock is what reqScan noted of one request's header block.
type rawBlock struct {
	obsFold                                  bool
	contentLengths, transferEncodings, hosts int
	emptyHost, http10                        bool
	length                                   int64 // the last Content-Length, -1 if unreadable
}

// next returns the notes on the oldest header block not yet taken, false
// when there is none to trust.
func (s *reqScan) next() (rawBlock, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.done) == 0 {
		return rawBlock{}, false
	}
	b := s.done[0]
	s.done = append(s.done[:0], s.done[1:]...)
	return b, true
}

// stop ends the noting: the connection carries something other than
// HTTP/1 requests from here on.
func (s *reqScan) stop() {
	s.mu.Lock()
	s.off = true
	s.mu.Unlock()
}

// feed notes the bytes p, read from the connection.
func (s *reqScan) feed(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(p) > 0 && !s.off {
		if s.skip > 0 {
			k := int64(len(p))
			if k > s.skip {
				k = s.skip
			}
			s.skip -= k
			p = p[k:]
			continue
		}
		seg := p
		eol := bytes.IndexByte(p, '\n')
		if eol >= 0 {
			seg = p[:eol]
		}
		if s.n < scanLine {
			copy(s.line[s.n:], seg)
		}
		s.n += len(seg)
		if s.lines == 0 {
			// Only the request line's last 8 bytes (and its '\r') matter.
			for _, c := range seg[max(0, len(seg)-9):] {
				if c != '\r' {
					s.tail = s.tail<<8 | uint64(c)
				}
			}
		}
		if eol < 0 {
			return
		}
		p = p[eol+1:]
		s.endLine()
	}
}

// http10 is "HTTP/1.0" as the 8 bytes of tail.
const http10 = uint64('H')<<56 | uint64('T')<<48 | uint64('T')<<40 | uint64('P')<<32 |
	uint64('/')<<24 | uint64('1')<<16 | uint64('.')<<8 | uint64('0')

func (s *reqScan) endLine() {
	n := s.n
	if n > 0 && n <= scanLine && s.line[n-1] == '\r' {
		n--
	}
	line := s.line[:min(n, scanLine)]
	s.n = 0
	switch {
	case n == 0 && s.lines == 0:
		// An empty line before a request line.
	case n == 0:
		s.endBlock()
	case s.lines == 0:
		s.cur = rawBlock{http10: s.tail == http10, length: -1}
		s.lines = 1
	default:
		s.header(line, n > scanLine)
		s.lines++
	}
}

func (s *reqScan) endBlock() {
	b := s.cur
	s.cur, s.lines, s.tail = rawBlock{}, 0, 0
	if len(s.done) >= maxScanAhead {
		s.off = true
		return
	}
	s.done = append(s.done, b)
	switch {
	case b.transferEncodings > 0:
		// A chunked body: where it ends is not followed here.
		s.off = true
	case b.contentLengths == 1 && b.length >= 0:
		s.skip = b.length
	case b.contentLengths > 0:
		s.off = true // refused, or Go's parser ends the connection
	}
}

// header notes one header line (without its CRLF; truncated when long).
func (s *reqScan) header(line []byte, long bool) {
	if line[0] == ' ' || line[0] == '\t' {
		s.cur.obsFold = true
		return
	}
	colon := -1
	for i, c := range line {
		if c == ':' {
			colon = i
			break
		}
	}
	if colon < 0 {
		return // Go's parser refuses it, or it is too long to matter
	}
	name, value := line[:colon], trimOWS(line[colon+1:])
	switch {
	case h1.EqualFold(name, "content-length"):
		s.cur.contentLengths++
		s.cur.length = -1
		if v, err := strconv.ParseUint(string(value), 10, 63); err == nil && !long {
			s.cur.length = int64(v)
		}
	case h1.EqualFold(name, "transfer-encoding"):
		s.cur.transferEncodings++
	case h1.EqualFold(name, "host"):
		s.cur.hosts++
		if len(value) == 0 && !long {
			s.cur.emptyHost = true
		}
	}
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}
