package h1

import "bytes"

// HeadEnd returns the length of the head at the start of b, the blank
// line that ends it (CRLF CRLF) included, or -1 when b does not hold a
// whole one. Event loops that gather a head from a non-blocking socket
// ask it after each read.
func HeadEnd(b []byte) int {
	i := bytes.Index(b, crlfcrlf)
	if i < 0 {
		return -1
	}
	return i + len(crlfcrlf)
}

var crlfcrlf = []byte("\r\n\r\n")

// EqualFold reports whether b is lower in any ASCII case; lower must be
// lower-case ASCII, as the header names a parser looks for are.
func EqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
