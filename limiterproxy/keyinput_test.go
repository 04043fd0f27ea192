package limiterproxy

import (
	"net/http"
	"net/url"
	"testing"
)

// TestKeyInput: what a request's keys read of it, the client address above
// all, which the server writes as "ip:port" and some handlers as a bare IP.
func TestKeyInput(t *testing.T) {
	for _, tt := range []struct {
		remote, query string
		url           *url.URL
		addr          string
	}{
		{remote: "10.1.2.3:5555", addr: "10.1.2.3"},
		{remote: "[2001:db8::1]:5555", addr: "2001:db8::1"},
		{remote: "2001:db8::1", addr: "2001:db8::1"},
		{remote: "[fe80::1%eth0]:5555", addr: "fe80::1"},
		{remote: "@", addr: "invalid IP"},
		{remote: "", addr: "invalid IP"},
		{remote: "10.0.0.1:1", url: &url.URL{Path: "/", RawQuery: "a=1&b"}, query: "a=1&b"},
	} {
		r := &http.Request{Host: "Site1:80", RemoteAddr: tt.remote, URL: tt.url, Header: http.Header{"X-A": {"1"}}}
		in := keyInput(r)
		if tt.addr != "" && in.Addr.String() != tt.addr {
			t.Errorf("RemoteAddr %q: Addr = %v, want %s", tt.remote, in.Addr, tt.addr)
		}
		if in.Host != "Site1:80" || in.Query != tt.query || in.Header["X-A"][0] != "1" {
			t.Errorf("RemoteAddr %q: %+v, want Host Site1:80, Query %q and the header", tt.remote, in, tt.query)
		}
	}
}
