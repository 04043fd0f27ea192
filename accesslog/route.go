package accesslog

import (
	"bytes"
	"slices"
)

// NormalPath appends to dst the route path stands for: numbers, UUIDs and
// hashes (and segments of mixed letters and many digits, like document
// names SINV-2026-00012) become {id}, while Frappe's /api/method/NAME
// keeps its NAME, which names the code that runs. A trailing slash is
// dropped, and an empty path is "/". A route normalises to itself. It
// reads the path once and allocates nothing when dst has room.
func NormalPath(dst, path []byte) []byte {
	start := len(dst)
	if bytes.HasPrefix(path, methodPrefix) {
		dst = append(dst, methodPrefix...)
		return append(dst, methodName(path[len(methodPrefix):])...)
	}
	for i := 0; i < len(path); {
		if path[i] == '/' {
			i++
			continue
		}
		j, id := pathSegment(path, i)
		dst = append(dst, '/')
		if id {
			dst = append(dst, "{id}"...)
		} else {
			dst = append(dst, path[i:j]...)
		}
		i = j
	}
	if len(dst) == start {
		dst = append(dst, '/')
	}
	// A path the segments made a method's (api/method/x, //api/method/x)
	// is the method's, as the path it is now would be.
	if r := dst[start:]; bytes.HasPrefix(r, methodPrefix) {
		dst = dst[:start+len(methodPrefix)+len(methodName(r[len(methodPrefix):]))]
	}
	return dst
}

var methodPrefix = []byte("/api/method/")

// methodName returns the dotted Python name at the start of name: what
// follows is not part of it.
func methodName(name []byte) []byte {
	if i := slices.IndexFunc(name, func(c byte) bool { return !methodByte[c] }); i >= 0 {
		return name[:i]
	}
	return name
}

// methodByte marks the bytes of a dotted Python name.
var methodByte = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.'
	}
	return t
}()

// pathSegment reads the path segment at path[i:] (up to the next / or the
// end) and returns where it ends and whether it names one thing among
// many: a number, a UUID, a hex hash (alone or as a part of a file name,
// like desk.bundle.3f2a9c1b.js), or a name with five digits or more.
func pathSegment(path []byte, i int) (end int, id bool) {
	// part counts the bytes of the current part between - _ and . by
	// class, a field of 16 bits each (a longer segment is read by isID);
	// all sums the parts.
	var part, all uint64
	hashPart := false
	seg := path[i:]
	j := 0
	for {
		for j < len(seg) {
			x := pathClass[seg[j]]
			if x&cSpecial != 0 {
				break
			}
			part += x
			j++
		}
		hashPart = hashPart || isHashPart(part)
		all += part
		part = 0
		if j == len(seg) || seg[j] == '/' {
			break
		}
		j++ // a separator
	}
	if j >= 1<<15 {
		return segmentLong(path, i)
	}
	digits, hex, other := int(all&0xffff), int(all>>16&0xffff), int(all>>32&0xffff)
	switch {
	case digits == 0:
		return i + j, false
	case digits == j:
		return i + j, true
	case other == 0 && digits+hex >= 16:
		return i + j, true // a UUID or a hash
	case hashPart:
		return i + j, true
	}
	return i + j, digits >= 5
}

// isHashPart reports whether a part's counts are those of a hex hash:
// six hex digits or more, a decimal one among them, nothing else.
func isHashPart(part uint64) bool {
	digits, hex, other := part&0xffff, part>>16&0xffff, part>>32&0xffff
	return other == 0 && digits > 0 && digits+hex >= 6
}

// segmentLong is pathSegment for a segment too long for its counters.
func segmentLong(path []byte, i int) (int, bool) {
	j := i
	for j < len(path) && path[j] != '/' {
		j++
	}
	return j, isID(path[i:j])
}

// pathClass is what pathSegment adds to its counters for a byte: 1 in the
// field of digits, of hex letters (a-f, A-F) or of other bytes; separators
// (- _ .) and / are cSpecial.
var pathClass = func() (t [256]uint64) {
	for c := range t {
		t[c] = 1 << 32
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = 1
	}
	for _, c := range "abcdefABCDEF" {
		t[c] = 1 << 16
	}
	for _, c := range "-_." {
		t[c] = cSpecial
	}
	t['/'] = cSlash
	return t
}()

const (
	cSpecial = 1 << 63
	cSlash   = cSpecial | 1
)

// isID is pathSegment's test for one segment, with counters of any size.
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
