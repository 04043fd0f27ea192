package h1

import (
	"net/http"
	"strings"
)

// What the server refuses before a handler sees a request, as net/http's
// server does.

// check returns the status net/http's server refuses req with before any
// handler sees it, and why; 0 if it takes it.
func check(req *http.Request) (int, string) {
	h2Preface := isH2Preface(req)
	if req.ProtoMajor != 1 && !h2Preface {
		return http.StatusHTTPVersionNotSupported, "unsupported protocol version"
	}
	// ReadRequest refuses a second Host and takes the header out of the
	// map, so an empty one cannot be told from none: both are refused on
	// HTTP/1.1, where net/http refuses only none.
	switch {
	case req.ProtoAtLeast(1, 1) && req.Host == "" && req.Method != http.MethodConnect && !h2Preface:
		return http.StatusBadRequest, "missing required Host header"
	case req.Host != "" && !validHost(req.Host):
		return http.StatusBadRequest, "malformed Host header"
	}
	for k, vv := range req.Header {
		if !validFieldName(k) {
			return http.StatusBadRequest, "invalid header name"
		}
		for _, v := range vv {
			if !validFieldValue(v) {
				return http.StatusBadRequest, "invalid header value"
			}
		}
	}
	if e := req.Header.Get("Expect"); e != "" && !hasToken(e, "100-continue") {
		return http.StatusExpectationFailed, ""
	}
	return 0, ""
}

// isH2Preface reports whether req is "PRI * HTTP/2.0", the start of an
// HTTP/2 connection's preface, which net/http's server hands to the
// handler (and closes after), so that a handler can refuse it or take the
// connection over.
func isH2Preface(req *http.Request) bool {
	return req.ProtoMajor == 2 && req.ProtoMinor == 0 && req.Method == "PRI" && req.RequestURI == "*"
}

// expectsContinue reports whether req waits for 100 Continue before it
// sends its body.
func expectsContinue(req *http.Request) bool {
	return req.ProtoAtLeast(1, 1) && req.ContentLength != 0 && hasToken(req.Header.Get("Expect"), "100-continue")
}

// hasToken reports whether the comma-separated list v holds token, in any
// case.
func hasToken(v, token string) bool {
	for part := range strings.SplitSeq(v, ",") {
		if strings.EqualFold(strings.TrimSpace(part), token) {
			return true
		}
	}
	return false
}

func validHost(h string) bool { return allIn(h, &validHostByte) }

// validHostByte are the bytes of a Host header: a reg-name, an IP literal
// and a port (RFC 3986), as net/http accepts them.
var validHostByte = byteSet("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!$%&'()*+,-.:;=[]_~")

// validFieldName reports whether k is an RFC 9110 token.
func validFieldName(k string) bool { return k != "" && allIn(k, &tokenByte) }

var tokenByte = byteSet("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!#$%&'*+-.^_`|~")

// byteSet is the set of the bytes of s.
func byteSet(s string) (set [256]bool) {
	for i := 0; i < len(s); i++ {
		set[s[i]] = true
	}
	return set
}

// allIn reports whether every byte of s is in set.
func allIn(s string, set *[256]bool) bool {
	for i := 0; i < len(s); i++ {
		if !set[s[i]] {
			return false
		}
	}
	return true
}

// validFieldValue reports whether v holds no control byte but tab.
func validFieldValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < ' ' && b != '\t' || b == 0x7f {
			return false
		}
	}
	return true
}
