package h1

import (
	"bufio"
	"bytes"
	"net/http"
	"net/url"
)

// A plain head is one that net/textproto and net/http read in a single
// way, which a parser of a few loops reads as they do for far less:
// lines ending in CRLF, field names that are tokens, values of printable
// ASCII and tabs, no field folded onto a second line. The server reads a
// plain request head so (readPlainRequest), and limiterproxy an
// upstream's plain response head; any other head goes to net/http's
// parser, which answers it as it always has.

// MaxPlainFields bounds the fields of a plain head; a head with more goes
// to net/http's parser.
const MaxPlainFields = 32

// PlainFields are the header fields of a plain head as Parse found them:
// offsets into the head's bytes, which Header turns into an http.Header
// with one string for them all. The zero value holds none.
type PlainFields struct {
	n      int
	fields [MaxPlainFields]plainField
}

type plainField struct {
	name, value [2]int
	canonical   bool // the name is in textproto's canonical form
}

// Len returns the number of fields.
func (p *PlainFields) Len() int { return p.n }

// Parse parses the field lines of b from off, where b is a head without
// its final CRLF, and reports whether they are plain. The values are
// taken as textproto takes them, without the blanks around them.
func (p *PlainFields) Parse(b []byte, off int) bool {
	p.n = 0
	for off < len(b) {
		eol := bytes.IndexByte(b[off:], '\n')
		if eol < 0 || p.n == MaxPlainFields || !p.field(b, off, off+eol+1) {
			return false
		}
		off += eol + 1
	}
	return true
}

// field parses the line b[from:to], "Name: value\r\n".
func (p *PlainFields) field(b []byte, from, to int) bool {
	l := b[from:to]
	if len(l) < 3 || l[len(l)-2] != '\r' {
		return false
	}
	colon := bytes.IndexByte(l, ':')
	if colon <= 0 {
		return false
	}
	canonical, ok := plainName(l[:colon])
	if !ok || !PlainValue(l[colon+1:len(l)-2]) {
		return false
	}
	start, end := colon+1, len(l)-2
	for start < end && (l[start] == ' ' || l[start] == '\t') {
		start++
	}
	for end > start && (l[end-1] == ' ' || l[end-1] == '\t') {
		end--
	}
	p.fields[p.n] = plainField{name: [2]int{from, from + colon}, value: [2]int{from + start, from + end}, canonical: canonical}
	p.n++
	return true
}

// Header returns the fields as textproto.Reader.ReadMIMEHeader would
// return them: canonical names, values in order. head is the head's bytes
// as a string; every value and canonical name is a substring of it.
func (p *PlainFields) Header(head string) http.Header {
	h := make(http.Header, p.n)
	values := make([]string, p.n)
	for i := range p.n {
		f := &p.fields[i]
		name := head[f.name[0]:f.name[1]]
		if !f.canonical {
			name = http.CanonicalHeaderKey(name)
		}
		values[i] = head[f.value[0]:f.value[1]]
		if vv, ok := h[name]; ok {
			h[name] = append(vv, values[i])
		} else {
			h[name] = values[i : i+1 : i+1]
		}
	}
	return h
}

// plainName reports whether k is a token, and whether it is in
// textproto's canonical form already ("Content-Type").
func plainName(k []byte) (canonical, ok bool) {
	canonical, upper := true, true
	for _, c := range k {
		if !tokenByte[c] {
			return false, false
		}
		if upper && 'a' <= c && c <= 'z' || !upper && 'A' <= c && c <= 'Z' {
			canonical = false
		}
		upper = c == '-'
	}
	return canonical, true
}

// PlainValue reports whether v is printable ASCII and tabs.
func PlainValue(v []byte) bool {
	for _, c := range v {
		if (c < ' ' && c != '\t') || c > '~' {
			return false
		}
	}
	return true
}

// PlainHead returns the head at the start of br's buffer, up to and
// including the CRLF that ends its last line (its blank line left out),
// when the buffer holds it whole and it has CRLF line ends; it reads
// nothing.
func PlainHead(br *bufio.Reader) ([]byte, bool) {
	buf, _ := br.Peek(br.Buffered()) // what is buffered: no read, no error
	end := bytes.Index(buf, crlfcrlf)
	if end < 0 {
		return nil, false
	}
	return buf[:end+2], true
}

// HasToken reports whether the comma-separated values hold token, in any
// ASCII case, as net/http reads Connection.
func HasToken(values []string, token string) bool {
	for _, v := range values {
		if hasToken(v, token) {
			return true
		}
	}
	return false
}

// readPlainRequest returns the request http.ReadRequest would read from
// br, when br's buffer holds a plain request head without a body: a
// request line "METHOD URI HTTP/1.x" whose method is a token other than
// CONNECT and PRI and whose URI is printable ASCII that
// url.ParseRequestURI takes, and fields with no Content-Length,
// Transfer-Encoding, Trailer or Pragma (framing and the fields net/http
// rewrites) and at most one Host. It reports false, having read nothing,
// for any other head.
func readPlainRequest(br *bufio.Reader) (*http.Request, bool) {
	b, ok := PlainHead(br)
	if !ok {
		return nil, false
	}
	eol := bytes.IndexByte(b, '\n')
	line := b[:eol+1]
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 || len(line) < sp+len(" / HTTP/1.1\r\n") || line[len(line)-2] != '\r' {
		return nil, false
	}
	method, rest := line[:sp], line[sp+1:len(line)-2]
	proto := rest[len(rest)-len("HTTP/1.1"):]
	uri := rest[:len(rest)-len(" HTTP/1.1")]
	if rest[len(uri)] != ' ' || string(proto[:7]) != "HTTP/1." || proto[7] != '0' && proto[7] != '1' ||
		len(uri) == 0 || bytes.IndexByte(uri, ' ') >= 0 || !PlainValue(uri) || bytes.IndexByte(uri, '\t') >= 0 {
		return nil, false
	}
	if _, ok := plainName(method); !ok || string(method) == http.MethodConnect || string(method) == "PRI" {
		return nil, false
	}
	var fields PlainFields
	if !fields.Parse(b, eol+1) {
		return nil, false
	}
	head := string(b)
	h := fields.Header(head)
	for _, k := range [...]string{"Content-Length", "Transfer-Encoding", "Trailer", "Pragma"} {
		if _, ok := h[k]; ok {
			return nil, false
		}
	}
	if len(h["Host"]) > 1 {
		return nil, false // http.ReadRequest's error
	}
	u, err := url.ParseRequestURI(head[sp+1 : sp+1+len(uri)])
	if err != nil {
		return nil, false // http.ReadRequest's error
	}
	req := &http.Request{
		Method: head[:sp], URL: u, Proto: head[sp+2+len(uri) : sp+2+len(uri)+8], ProtoMajor: 1, ProtoMinor: int(proto[7] - '0'),
		Header: h, Body: http.NoBody, Host: u.Host, RequestURI: head[sp+1 : sp+1+len(uri)],
	}
	if req.Host == "" {
		if hv := h["Host"]; len(hv) > 0 {
			req.Host = hv[0]
		}
	}
	delete(h, "Host") // as http.ReadRequest takes it out
	conn := h["Connection"]
	req.Close = HasToken(conn, "close") || req.ProtoMinor == 0 && !HasToken(conn, "keep-alive")
	br.Discard(len(b) + 2) //nolint:errcheck // buffered
	return req, true
}
