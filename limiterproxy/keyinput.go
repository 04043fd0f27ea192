package limiterproxy

import (
	"net/http"
	"net/netip"

	"stampede/limit"
)

// keyInput is what r gives the limits' keys.
func keyInput(r *http.Request) limit.Request {
	in := limit.Request{Host: r.Host, Header: r.Header}
	if r.URL != nil {
		in.Query = r.URL.RawQuery
	}
	in.Addr = remoteAddr(r.RemoteAddr)
	return in
}

// remoteAddr reads the client address from r.RemoteAddr ("ip:port", or a
// bare IP as some handlers set it), without its IPv6 zone; the zero Addr
// when it is neither (a Unix socket).
func remoteAddr(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().WithZone("")
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.WithZone("")
	}
	return netip.Addr{}
}
