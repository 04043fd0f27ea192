package limit

// ValidHost reports whether nginx accepts host as a request's host (from the
// request line or the Host header): letters, digits and the characters RFC
// 3986 allows in a host name, no "..", an optional port up to 65535, or an
// IP literal in brackets. nginx answers a request with an invalid host 400.
func ValidHost(host string) bool {
	_, ok := hostSpan(host)
	return ok
}

// NormalizeHost returns host as nginx's $host gives it: lower-cased, without
// the port and one trailing dot; ok is false when nginx would reject it.
func NormalizeHost(host string) (string, bool) {
	n, ok := hostSpan(host)
	if !ok {
		return "", false
	}
	// A host already in lower case, as clients send it, is its own
	// $host: the proxy asks for it on every request.
	for i := 0; i < n; i++ {
		if c := host[i]; 'A' <= c && c <= 'Z' {
			return string(appendLower(make([]byte, 0, n), host[:n])), true
		}
	}
	return host[:n], true
}

func appendHost(dst []byte, host string) []byte {
	n, ok := hostSpan(host)
	if !ok {
		return dst
	}
	return appendLower(dst, host[:n])
}

func appendLower(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// hostSpan validates host the way nginx's request parser does and returns
// the length of the part $host keeps: the name (or bracketed IP literal)
// without the port and without one trailing dot.
func hostSpan(h string) (int, bool) {
	const (
		start = iota
		name
		literal
		literalEnd
		port
	)
	state := start
	dot := -2 // index of the last '.'; -2 so that "." at 0 is not "two dots"
	end := len(h)
	portVal := 0
	for i := 0; i < len(h); i++ {
		c := h[i]
		if state == start {
			if c == '[' {
				state = literal
				continue
			}
			state = name
		}
		switch {
		case c == '.' && (state == name || state == literal):
			if dot == i-1 {
				return 0, false
			}
			dot = i
		case state == name:
			switch {
			case hostByte(c), c == '%':
			case c == ':':
				end = i
				state = port
			default:
				return 0, false
			}
		case state == literal:
			switch {
			case hostByte(c), c == ':':
			case c == ']':
				end = i + 1
				state = literalEnd
			default:
				return 0, false
			}
		case state == literalEnd:
			if c != ':' {
				return 0, false
			}
			state = port
		default: // port
			if c < '0' || c > '9' {
				return 0, false
			}
			portVal = portVal*10 + int(c-'0')
			if portVal > 65535 {
				return 0, false
			}
		}
	}
	if state == literal {
		return 0, false
	}
	if dot == end-1 {
		end--
	}
	if end <= 0 {
		return 0, false
	}
	return end, true
}

// hostByte reports whether c may appear anywhere in a host name: letters,
// digits, "-", the unreserved "_" and "~", and the RFC 3986 sub-delims.
func hostByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	switch c {
	case '-', '_', '~', '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=':
		return true
	}
	return false
}
