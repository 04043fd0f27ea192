package limit

import (
	"fmt"
	"net/netip"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Key is a compiled nginx key expression: variables ($host,
// $binary_remote_addr, $remote_addr, $http_NAME) and literal text,
// concatenated. The zero Key evaluates to empty.
type Key struct {
	src   string
	parts []keyPart
}

type keyPart struct {
	kind int
	lit  string
}

// String returns the expression as nginx writes it.
func (k Key) String() string { return k.src }

// The kinds of keyPart.
const (
	partLiteral          = iota // lit, as written
	partHost                    // $host
	partBinaryRemoteAddr        // $binary_remote_addr
	partRemoteAddr              // $remote_addr
	partHeader                  // $http_NAME; lit is the canonical header name
	partHTTPHost                // $http_host: the Host header, Request.Host as sent
	partCookie                  // $http_cookie: values joined with "; " as nginx does
	partArg                     // $arg_NAME; lit is "arg_" and the lower-cased NAME
)

// MaxConnKey and MaxReqKey are the longest key values nginx counts; longer
// ones are let through uncounted (and nginx logs them).
const (
	MaxConnKey = 255
	MaxReqKey  = 65535
)

const supportedVars = "$host, $binary_remote_addr, $remote_addr, $http_NAME, $arg_NAME"

// ParseKey compiles an nginx key expression. A leading "$" may be left out
// when the whole key is one variable ("host" means "$host"). Variables are
// written $name or ${name}, case-insensitively as in nginx; text around them
// is literal. A key without any "$" that looks like a variable name is taken
// as one, so a misspelt "hots" is an error rather than a constant key.
func ParseKey(s string) (Key, error) {
	if s == "" {
		return Key{}, fmt.Errorf("empty key (want e.g. $host or $binary_remote_addr)")
	}
	if !strings.Contains(s, "$") && isVarName(s) {
		s = "$" + s
	}
	var parts []keyPart
	for i := 0; i < len(s); {
		if s[i] != '$' {
			j := strings.IndexByte(s[i:], '$')
			if j < 0 {
				j = len(s) - i
			}
			parts = append(parts, keyPart{kind: partLiteral, lit: s[i : i+j]})
			i += j
			continue
		}
		i++
		var name string
		if i < len(s) && s[i] == '{' {
			j := strings.IndexByte(s[i:], '}')
			if j < 0 {
				return Key{}, fmt.Errorf("key %q: unterminated \"${\"", s)
			}
			name = s[i+1 : i+j]
			if !isVarName(name) {
				return Key{}, fmt.Errorf("key %q: %q is not a variable name", s, "${"+name+"}")
			}
			i += j + 1
		} else {
			j := i
			for j < len(s) && isVarByte(s[j]) {
				j++
			}
			name = s[i:j]
			if name == "" {
				return Key{}, fmt.Errorf("key %q: \"$\" at byte %d is not followed by a variable name (supported: %s)", s, i-1, supportedVars)
			}
			i = j
		}
		p, err := varPart(strings.ToLower(name))
		if err != nil {
			return Key{}, fmt.Errorf("key %q: %w", s, err)
		}
		parts = append(parts, p)
	}
	k := Key{parts: parts}
	k.src = k.format()
	return k, nil
}

func varPart(name string) (keyPart, error) {
	switch name {
	case "host":
		return keyPart{kind: partHost, lit: name}, nil
	case "binary_remote_addr":
		return keyPart{kind: partBinaryRemoteAddr, lit: name}, nil
	case "remote_addr":
		return keyPart{kind: partRemoteAddr, lit: name}, nil
	case "http_host":
		return keyPart{kind: partHTTPHost, lit: name}, nil
	case "http_cookie":
		return keyPart{kind: partCookie, lit: name}, nil
	}
	if a, ok := strings.CutPrefix(name, "arg_"); ok && a != "" {
		return keyPart{kind: partArg, lit: name}, nil
	}
	if h, ok := strings.CutPrefix(name, "http_"); ok && h != "" {
		return keyPart{kind: partHeader, lit: canonicalHeader(strings.ReplaceAll(h, "_", "-"))}, nil
	}
	return keyPart{}, fmt.Errorf("unknown variable \"$%s\" (supported: %s)", name, supportedVars)
}

// format writes the key back as nginx reads it, with braces where a variable
// runs into literal text that could continue its name.
func (k Key) format() string {
	var b strings.Builder
	for i, p := range k.parts {
		if p.kind == partLiteral {
			b.WriteString(p.lit)
			continue
		}
		name := varName(p)
		if i+1 < len(k.parts) && k.parts[i+1].kind == partLiteral && isVarByte(k.parts[i+1].lit[0]) {
			b.WriteString("${" + name + "}")
		} else {
			b.WriteString("$" + name)
		}
	}
	return b.String()
}

// canonicalHeader writes a header name as net/http keys it: upper case at
// the start and after each "-", lower case elsewhere. name is made of the
// bytes isVarByte allows and "-", where that is all net/http does.
func canonicalHeader(name string) string {
	b := []byte(name)
	upper := true
	for i, c := range b {
		switch {
		case upper && c >= 'a' && c <= 'z':
			b[i] = c - ('a' - 'A')
		case !upper && c >= 'A' && c <= 'Z':
			b[i] = c + ('a' - 'A')
		}
		upper = c == '-'
	}
	return string(b)
}

func varName(p keyPart) string {
	if p.kind == partHeader {
		return "http_" + strings.ReplaceAll(strings.ToLower(p.lit), "-", "_")
	}
	return p.lit
}

func isVarByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func isVarName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isVarByte(s[i]) {
			return false
		}
	}
	return true
}

// Variables lists the nginx variables the key uses, each once, without "$"
// (e.g. ["host", "binary_remote_addr"]), in order of first use.
func (k Key) Variables() []string {
	var vs []string
	for _, p := range k.parts {
		if p.kind == partLiteral {
			continue
		}
		n := varName(p)
		dup := false
		for _, v := range vs {
			dup = dup || v == n
		}
		if !dup {
			vs = append(vs, n)
		}
	}
	return vs
}

// Request is what nginx's variables read from a request, the whole input
// of a key: the live proxy fills it from each *http.Request, the simulator
// from each tenant's client. The zero Request gives every variable empty.
type Request struct {
	// Host is the request's host as the client sent it (the Host header,
	// or the host of an absolute request line), port included.
	Host string
	// Addr is the client's address. Its zone is ignored; the zero Addr
	// (a Unix socket) makes $remote_addr and $binary_remote_addr empty.
	Addr netip.Addr
	// Header holds the request's headers under canonical names, as
	// net/http's Header does; nil means none. Header is read, never
	// changed.
	Header map[string][]string
	// Query is the raw query, without the "?", as sent; $arg_NAME reads it.
	Query string
}

// Append appends the key's value for r to dst, as nginx computes it ($host
// lower-cased with port and trailing dot removed; $binary_remote_addr 4 or 16
// raw bytes). It does not allocate when dst has room for the value.
//
// $host is empty when r.Host is missing or is not a host nginx accepts
// (nginx answers such requests 400 before any limit runs; see ValidHost).
// $remote_addr and $binary_remote_addr are empty when r.Addr is the zero
// Addr.
func (k Key) Append(dst []byte, r *Request) []byte {
	for _, p := range k.parts {
		switch p.kind {
		case partLiteral:
			dst = append(dst, p.lit...)
		case partHost:
			dst = appendHost(dst, r.Host)
		case partBinaryRemoteAddr:
			if a := r.Addr.WithZone(""); a.Is4() {
				b := a.As4()
				dst = append(dst, b[:]...)
			} else if a.IsValid() {
				b := a.As16()
				dst = append(dst, b[:]...)
			}
		case partRemoteAddr:
			if a := r.Addr.WithZone(""); a.IsValid() {
				dst = a.AppendTo(dst)
			}
		case partHTTPHost:
			dst = append(dst, r.Host...)
		case partHeader:
			dst = appendHeader(dst, r.Header[p.lit], ", ")
		case partCookie:
			dst = appendHeader(dst, r.Header["Cookie"], "; ")
		case partArg:
			dst = appendArg(dst, r.Query, p.lit[len("arg_"):])
		}
	}
	return dst
}

// Display writes value, a value of k (as Append gives it), as text: a
// $binary_remote_addr key as its address ("10.0.0.7", "2001:db8::1"), and
// any other key with bytes that are not printable UTF-8 (a concatenation
// with $binary_remote_addr) with those bytes escaped as \xNN, so that
// different keys read differently.
func (k Key) Display(raw string) string {
	if len(k.parts) == 1 && k.parts[0].kind == partBinaryRemoteAddr {
		if a, ok := netip.AddrFromSlice([]byte(raw)); ok {
			return a.String()
		}
	}
	printable := utf8.ValidString(raw)
	for _, r := range raw {
		printable = printable && unicode.IsPrint(r) && r != '\\'
	}
	if printable {
		return raw
	}
	var b strings.Builder
	for i := 0; i < len(raw); {
		r, n := utf8.DecodeRuneInString(raw[i:])
		if r == '\\' || r == utf8.RuneError || !unicode.IsPrint(r) {
			for _, c := range []byte(raw[i : i+n]) {
				fmt.Fprintf(&b, "\\x%02x", c)
			}
		} else {
			b.WriteString(raw[i : i+n])
		}
		i += n
	}
	return b.String()
}

// appendArg appends the value of the query argument name in the raw query
// q as nginx's $arg_NAME gives it: the first argument whose name matches
// (ASCII case-insensitively) and that has "=", its value as sent, not
// unescaped, up to the next "&". An argument without "=" is not a match.
func appendArg(dst []byte, q, name string) []byte {
	for i := 0; i+len(name) < len(q); {
		if q[i+len(name)] == '=' && asciiEqualFold(q[i:i+len(name)], name) {
			v := q[i+len(name)+1:]
			if j := strings.IndexByte(v, '&'); j >= 0 {
				v = v[:j]
			}
			return append(dst, v...)
		}
		j := strings.IndexByte(q[i:], '&')
		if j < 0 {
			break
		}
		i += j + 1
	}
	return dst
}

// asciiEqualFold is strings.EqualFold for ASCII letters only, as nginx
// compares: no Unicode folding of the raw bytes of a query.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x >= 'A' && x <= 'Z' {
			x += 'a' - 'A'
		}
		if y >= 'A' && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func appendHeader(dst []byte, vs []string, sep string) []byte {
	for i, v := range vs {
		if i > 0 {
			dst = append(dst, sep...)
		}
		dst = append(dst, v...)
	}
	return dst
}
