package limiterproxy

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strconv"

	"stampede/internal/h1"
)

// readHead reads a response head the way http.ReadResponse does, into
// resp, with body as the reader of a body of known length, when the head
// is plain: it is all in br's buffer after at most one read, its lines end
// in CRLF, it is HTTP/1.0 or 1.1 with a final status from 200 to 599, its
// names are tokens in canonical form or lower case and its values
// printable ASCII, and its body is framed by one Content-Length (or has
// none by the status or the method) with no Transfer-Encoding, Trailer or
// Pragma, the fields http.ReadResponse rewrites or frames by. Such a head
// is what an app answers nearly always; it costs one string for the whole
// head, the map and no more. It reports false, having consumed nothing
// but filled the buffer, for any other head, which http.ReadResponse then
// reads from br as it stands; an error is the one http.ReadResponse
// would have returned for a read that brought no byte.
func readHead(br *bufio.Reader, req *http.Request, resp *http.Response, body *knownBody) (bool, error) {
	if br.Buffered() == 0 {
		if _, err := br.Peek(1); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return true, err
		}
	}
	b, ok := h1.PlainHead(br)
	if !ok {
		return false, nil
	}
	var h plainHead
	if !h.parse(b) {
		return false, nil
	}
	head := string(b) // every name and value is a substring of it
	hdr := h.fields.Header(head)
	if !h.framedBy(hdr, req) {
		return false, nil
	}
	br.Discard(len(b) + 2) //nolint:errcheck // buffered
	*resp = http.Response{
		Status: head[h.status[0]:h.status[1]], StatusCode: h.code,
		Proto: head[:8], ProtoMajor: 1, ProtoMinor: h.minor,
		Header: hdr, Request: req, ContentLength: h.length, Close: h.close,
	}
	switch {
	case h.bodyLength == 0:
		resp.Body = http.NoBody
	default:
		*body = knownBody{br: br, left: h.bodyLength}
		resp.Body = body
	}
	return true, nil
}

// plainHead is a response head as readHead parses it: offsets into the
// head's bytes, which it copies only once it knows it takes the head.
type plainHead struct {
	minor, code int
	status      [2]int // "200 OK"
	fields      h1.PlainFields
	// From the fields, once framedBy has read them:
	length     int64 // resp.ContentLength
	bodyLength int64 // the body's bytes on the wire
	close      bool
}

// parse parses the head b, its final CRLF excluded, and reports whether it
// is plain.
func (h *plainHead) parse(b []byte) bool {
	eol := bytes.IndexByte(b, '\n')
	return eol >= 0 && h.statusLine(b[:eol+1]) && h.fields.Parse(b, eol+1)
}

// statusLine parses "HTTP/1.1 200 OK\r\n": one space after the version,
// three digits, then nothing or a space and a printable reason.
func (h *plainHead) statusLine(l []byte) bool {
	if len(l) < len("HTTP/1.1 200\r\n") || string(l[:7]) != "HTTP/1." || l[8] != ' ' || l[len(l)-2] != '\r' {
		return false
	}
	switch l[7] {
	case '0', '1':
		h.minor = int(l[7] - '0')
	default:
		return false
	}
	c := l[9:12]
	if c[0] < '2' || c[0] > '5' || c[1] < '0' || c[1] > '9' || c[2] < '0' || c[2] > '9' {
		return false
	}
	h.code = int(c[0]-'0')*100 + int(c[1]-'0')*10 + int(c[2]-'0')
	reason := l[12 : len(l)-2]
	if len(reason) > 0 && (reason[0] != ' ' || !h1.PlainValue(reason)) {
		return false
	}
	h.status = [2]int{9, len(l) - 2}
	return true
}

// framedBy works out, as http.ReadResponse's transfer rules do, the
// framing of the body of a response to req with header hdr, and reports
// whether it is plain: no Transfer-Encoding, Trailer or Pragma, and a body
// of known length.
func (h *plainHead) framedBy(hdr http.Header, req *http.Request) bool {
	if _, ok := hdr["Transfer-Encoding"]; ok {
		return false
	}
	if _, ok := hdr["Trailer"]; ok {
		return false
	}
	if _, ok := hdr["Pragma"]; ok {
		return false
	}
	h.length = -1
	if cl := hdr["Content-Length"]; len(cl) > 1 {
		return false
	} else if len(cl) == 1 {
		n, err := strconv.ParseUint(cl[0], 10, 63)
		if err != nil {
			return false
		}
		h.length = int64(n)
	}
	conn := hdr["Connection"]
	hasClose := h1.HasToken(conn, "close")
	if h.minor == 0 {
		h.close = hasClose || !h1.HasToken(conn, "keep-alive")
	} else if h.close = hasClose; hasClose {
		delete(hdr, "Connection")
	}
	head := req != nil && req.Method == http.MethodHead
	switch {
	case head || h.code == http.StatusNoContent || h.code == http.StatusNotModified:
		h.bodyLength = 0
		if !head {
			h.length = 0
		}
	case h.length < 0:
		return false // up to the close: http.ReadResponse's
	default:
		h.bodyLength = h.length
	}
	return true
}

// knownBody is a response body of known length read from br, as
// net/http's: the last bytes come with io.EOF, and a stream that ends
// short fails with io.ErrUnexpectedEOF.
type knownBody struct {
	br     *bufio.Reader
	left   int64
	closed bool
}

func (b *knownBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.br.Read(p)
	b.left -= int64(n)
	switch {
	case b.left == 0:
		err = io.EOF
	case err == io.EOF:
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// Close ends the body without draining it: the exchange closes a
// connection whose body was not read to its end.
func (b *knownBody) Close() error {
	b.closed = true
	return nil
}
