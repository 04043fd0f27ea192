package h1

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
)

// AppendGet appends to b the GET for uri with Host host that Client.GetBy
// and Line.Send write, and returns the extended slice.
func AppendGet(b []byte, uri, host string) []byte {
	b = append(b, "GET "...)
	b = append(b, uri...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	return append(b, "\r\nUser-Agent: Go-http-client/1.1\r\n\r\n"...)
}

// maxAnswerHead bounds the head of an answer an Answer keeps while it
// waits for the rest of it; each of its lines is bounded as readAnswer
// bounds them (by the bufio.Reader's 4096 bytes).
const maxAnswerHead = 64 << 10

// States of an Answer.
const (
	answerHead       = iota // waiting for a whole head
	answerLength            // a body of known length; left is what remains
	answerToEnd             // a body that runs to the connection's end
	answerChunkSize         // a chunk's size line, size so far in left
	answerChunkSpace        // whitespace after a chunk's size
	answerChunkExt          // the rest of a chunk's size line (extensions)
	answerChunkData         // a chunk's data; left is what remains
	answerChunkCRLF         // the CRLF after a chunk's data; crlf is how much came
	answerTrailer           // trailer lines, then the empty line
	answerDone              // the answer is whole
)

// maxChunkLine bounds a chunk's size line, as httputil's chunked reader
// bounds it.
const maxChunkLine = 4096

// Answer reads an answer to a GET from its bytes as they come off a
// non-blocking connection, in pieces cut anywhere (Feed), with what
// readAnswer does: 1xx answers skipped, the body of known length, chunked
// or up to the connection's end read without being kept, and the same
// Status and Keep. An event loop reads with it what Client.GetBy reads with
// a goroutine parked on the connection. Only the head is kept, until it
// is whole, and never more than 64 KiB of it.
//
// The zero value is ready to read an answer; Reset readies it for the
// next. It is not safe for concurrent use.
type Answer struct {
	// Header, when not nil, is called with each header field's name and
	// value (valid only during the call) of every head read, as GetBy's
	// header is.
	Header func(name, value []byte)

	state  int
	begun  bool // a byte came
	h      head
	left   int64
	sized  bool  // answerChunkSize: a digit came
	crlf   int   // answerChunkCRLF: how much of the CRLF came; a chunk-size line: 1 once its CR came
	line   int   // bytes of the chunk-size or trailer line so far
	excess int64 // a chunked body's bytes that are not data, as httputil counts them
	head   []byte
	rd     bytes.Reader
	br     *bufio.Reader
	status int
}

// Reset readies a for the next answer, keeping Header.
func (a *Answer) Reset() {
	*a = Answer{Header: a.Header, head: a.head[:0], br: a.br}
}

// Started reports whether any byte of the answer has come.
func (a *Answer) Started() bool { return a.begun }

// Status returns the status of the answer Feed or End said was whole.
func (a *Answer) Status() int { return a.status }

// Keep reports whether the connection may carry another request after
// the answer Feed or End said was whole.
func (a *Answer) Keep() bool { return !a.h.close && a.status != 101 }

// Feed takes the next bytes of the connection, b, and returns how many of
// them belong to the answer and whether it is whole; bytes past its end
// are not taken. An answer it cannot parse fails with an error that wraps
// the one GetBy's would.
func (a *Answer) Feed(b []byte) (n int, done bool, err error) {
	// A 1xx head, once read, leaves nothing kept: the answer has begun
	// all the same, and GetBy would not send the request again.
	a.begun = a.begun || len(b) > 0
	for n < len(b) && a.state != answerDone {
		var k int
		k, err = a.step(b[n:])
		n += k
		if err != nil {
			return n, false, err
		}
	}
	return n, a.state == answerDone, nil
}

// End tells a that the connection ended (its peer closed it, io.EOF) after
// the bytes fed so far, and reports whether the answer is whole; an
// answer cut short fails with io.ErrUnexpectedEOF, as GetBy's does.
func (a *Answer) End() (done bool, err error) {
	switch a.state {
	case answerDone:
		return true, nil
	case answerToEnd:
		a.state = answerDone
		return true, nil
	}
	return false, io.ErrUnexpectedEOF
}

// step takes what it can of b in the current state.
func (a *Answer) step(b []byte) (int, error) {
	switch a.state {
	case answerHead:
		return a.stepHead(b)
	case answerLength:
		k := int(min(a.left, int64(len(b))))
		a.left -= int64(k)
		if a.left == 0 {
			a.state = answerDone
		}
		return k, nil
	case answerToEnd:
		return len(b), nil
	case answerChunkSize, answerChunkSpace, answerChunkExt:
		return a.stepChunkSize(b)
	case answerChunkData:
		k := int(min(a.left, int64(len(b))))
		a.left -= int64(k)
		if a.left == 0 {
			a.state, a.crlf = answerChunkCRLF, 0
		}
		return k, nil
	case answerChunkCRLF:
		// httputil's reader wants exactly CRLF after the data.
		c := b[0]
		if a.crlf == 0 && c != '\r' || a.crlf == 1 && c != '\n' {
			return 0, fmt.Errorf("%w: chunked body: malformed chunked encoding", errMalformed)
		}
		a.crlf++
		if a.crlf == 2 {
			a.state, a.left, a.sized, a.line = answerChunkSize, 0, false, 0
		}
		return 1, nil
	case answerTrailer:
		return a.stepTrailer(b)
	}
	return 0, nil
}

var lflf = []byte("\n\n")

// stepHead keeps b until the head is whole, then parses it as readHead
// does and moves on to the body, or to the next head after a 1xx one.
func (a *Answer) stepHead(b []byte) (int, error) {
	old := len(a.head)
	// The head ends at an empty line: LF LF or LF CR LF, the LF of the
	// line before it possibly among the bytes kept.
	from := max(old-2, 0)
	a.head = append(a.head, b...)
	end := -1
	if i := bytes.Index(a.head[from:], crlfcrlf[1:]); i >= 0 {
		end = from + i + 3
	}
	// LF LF: rare, looked for only before the first LF CR LF.
	lf := a.head[from:]
	if end >= 0 {
		lf = a.head[from:end]
	}
	if i := bytes.Index(lf, lflf); i >= 0 {
		end = from + i + 2
	}
	if end < 0 {
		if len(a.head) > maxAnswerHead {
			return len(b), fmt.Errorf("%w: a head over %d bytes", errMalformed, maxAnswerHead)
		}
		return len(b), nil
	}
	used := end - old
	if a.br == nil {
		a.br = bufio.NewReaderSize(nil, 4096)
	}
	a.rd.Reset(a.head[:end])
	a.br.Reset(&a.rd)
	h, err := readHead(a.br, a.Header)
	a.head = a.head[:0]
	if err != nil {
		return used, err
	}
	switch {
	case h.status < 200 && h.status != 101:
		// 1xx: the next head follows.
	case !bodyAllowed(h.status):
		a.h, a.status, a.state = h, h.status, answerDone
	case h.chunked:
		a.h, a.status, a.state = h, h.status, answerChunkSize
	case h.length >= 0:
		a.h, a.status, a.state, a.left = h, h.status, answerLength, h.length
		if h.length == 0 {
			a.state = answerDone
		}
	default:
		a.h, a.status, a.state = h, h.status, answerToEnd
	}
	return used, nil
}

// stepChunkSize reads a chunk's size line as httputil's chunked reader
// does: hex digits, then optional whitespace, or a semicolon and
// extensions skipped, and CRLF (no bare LF, no other CR).
func (a *Answer) stepChunkSize(b []byte) (int, error) {
	bad := func() (int, error) {
		return 0, fmt.Errorf("%w: chunked body: invalid byte in chunk length", errMalformed)
	}
	for i, c := range b {
		a.line++
		if a.line > maxChunkLine {
			return 0, fmt.Errorf("%w: chunked body: chunk size line too long", errMalformed)
		}
		if a.crlf == 1 {
			if c != '\n' {
				return 0, fmt.Errorf("%w: chunked body: invalid CR in chunked line", errMalformed)
			}
			if !a.sized {
				return bad()
			}
			// httputil's bound on what is not data: 16 bytes a chunk and
			// twice its data are free, 16 KiB more in all.
			a.excess = max(a.excess+int64(a.line)-16-2*min(a.left, 1<<40), 0)
			if a.excess > 16<<10 {
				return 0, fmt.Errorf("%w: chunked body: chunked encoding contains too much non-data", errMalformed)
			}
			if a.left == 0 {
				a.state, a.line, a.crlf = answerTrailer, 0, 0
			} else {
				a.state, a.crlf = answerChunkData, 0
			}
			return i + 1, nil
		}
		switch {
		case c == '\r':
			a.crlf = 1
		case c == '\n':
			return 0, fmt.Errorf("%w: chunked body: chunked line ends with bare LF", errMalformed)
		case a.state == answerChunkExt:
		case c == ' ' || c == '\t':
			if !a.sized {
				return bad()
			}
			a.state = answerChunkSpace
		case a.state == answerChunkSpace:
			// Only whitespace may follow whitespace after the size.
			return bad()
		case c == ';':
			if !a.sized {
				return bad()
			}
			a.state = answerChunkExt
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
			if a.line > 16 {
				return 0, fmt.Errorf("%w: chunked body: http chunk length too large", errMalformed)
			}
			// A size past int64 is read as the most there is: its data
			// never all comes, for httputil's reader either.
			if a.left > math.MaxInt64>>4 {
				a.left = math.MaxInt64
			} else {
				a.left = a.left<<4 | int64(unhex(c))
			}
			a.sized = true
		default:
			return bad()
		}
	}
	return len(b), nil
}

// stepTrailer skips trailer lines up to the empty line that ends the
// answer.
func (a *Answer) stepTrailer(b []byte) (int, error) {
	for i, c := range b {
		if c == '\n' {
			if a.line == 0 || a.line == 1 && a.crlf == 1 {
				a.state = answerDone
				return i + 1, nil
			}
			a.line, a.crlf = 0, 0
			continue
		}
		if a.line == 0 && c == '\r' {
			a.crlf = 1
		}
		a.line++
		// readLine's bufio.Reader holds 4096 bytes, the LF among them.
		if a.line >= 4096 {
			return 0, fmt.Errorf("%w: a head line over %d bytes", errMalformed, 4096)
		}
	}
	return len(b), nil
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
