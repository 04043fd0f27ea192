package accesslog

import (
	"bytes"
)

// NormalPath appends to dst the route path stands for: numbers, UUIDs and
// hashes (and segments of mixed letters and many digits, like document
// names SINV-2026-00012) become {id}, while Frappe's /api/method/NAME
// keeps its NAME, which names the code that runs. A trailing slash is
// dropped, and an empty path is "/".
func NormalPath(dst, path []byte) []byte {
	start := len(dst)
	if bytes.HasPrefix(path, []byte("/api/method/")) {
		name := path[len("/api/method/"):]
		// A method is a dotted Python name; what follows is not part of it.
		for i, c := range name {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
				name = name[:i]
				break
			}
		}
		dst = append(dst, "/api/method/"...)
		return append(dst, name...)
	}
	for len(path) > 0 {
		if path[0] == '/' {
			path = path[1:]
			continue
		}
		i := bytes.IndexByte(path, '/')
		if i < 0 {
			i = len(path)
		}
		seg := path[:i]
		path = path[i:]
		dst = append(dst, '/')
		if isID(seg) {
			dst = append(dst, "{id}"...)
		} else {
			dst = append(dst, seg...)
		}
	}
	if len(dst) == start {
		dst = append(dst, '/')
	}
	return dst
}

// isID reports whether a path segment names one thing among many: a
// number, a UUID, a hex hash (alone or as a part of a file name, like
// desk.bundle.3f2a9c1b.js), or a name with five digits or more.
func isID(seg []byte) bool {
	digits, hex, other := 0, 0, 0
	partLen, partHex, partDigits := 0, 0, 0 // the current part between . - _
	hashPart := false
	for _, c := range seg {
		switch charClass[c] {
		case cDigit:
			digits++
			partDigits++
			partHex++
			partLen++
		case cHex:
			hex++
			partHex++
			partLen++
		case cSep:
			if partHex >= 6 && partDigits > 0 && partHex == partLen {
				hashPart = true
			}
			partLen, partHex, partDigits = 0, 0, 0
		default:
			other++
			partLen++
		}
	}
	if partHex >= 6 && partDigits > 0 && partHex == partLen {
		hashPart = true
	}
	switch {
	case digits == 0:
		return false
	case digits == len(seg):
		return true
	case other == 0 && digits+hex >= 16:
		return true // a UUID or a hash
	case hashPart:
		return true
	}
	return digits >= 5
}

// Character classes of isID.
const (
	cOther uint8 = iota
	cDigit
	cHex // a-f, A-F
	cSep // - _ .
)

var charClass = func() (t [256]uint8) {
	for c := '0'; c <= '9'; c++ {
		t[c] = cDigit
	}
	for _, c := range "abcdefABCDEF" {
		t[c] = cHex
	}
	for _, c := range "-_." {
		t[c] = cSep
	}
	return t
}()
