package limit

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseKeyForms(t *testing.T) {
	tests := []struct {
		in, want string
		vars     []string
	}{
		{"$host", "$host", []string{"host"}},
		{"host", "$host", []string{"host"}},
		{"HOST", "$host", []string{"host"}},
		{"${host}", "$host", []string{"host"}},
		{"binary_remote_addr", "$binary_remote_addr", []string{"binary_remote_addr"}},
		{"$remote_addr", "$remote_addr", []string{"remote_addr"}},
		{"$http_x_tenant", "$http_x_tenant", []string{"http_x_tenant"}},
		{"$HTTP_X_Tenant", "$http_x_tenant", []string{"http_x_tenant"}},
		{"$host$binary_remote_addr", "$host$binary_remote_addr", []string{"host", "binary_remote_addr"}},
		{"${host}abc", "${host}abc", []string{"host"}},
		{"$host:$remote_addr", "$host:$remote_addr", []string{"host", "remote_addr"}},
		{"site-$host", "site-$host", []string{"host"}},
		{"all-requests", "all-requests", nil},
		{"$host$host", "$host$host", []string{"host"}},
		{"$arg_site", "$arg_site", []string{"arg_site"}},
		{"$ARG_Site", "$arg_site", []string{"arg_site"}},
		{"arg_c", "$arg_c", []string{"arg_c"}},
		{"$binary_remote_addr$arg_c", "$binary_remote_addr$arg_c", []string{"binary_remote_addr", "arg_c"}},
	}
	for _, tt := range tests {
		k, err := ParseKey(tt.in)
		if err != nil {
			t.Errorf("ParseKey(%q): %v", tt.in, err)
			continue
		}
		if got := k.String(); got != tt.want {
			t.Errorf("ParseKey(%q).String() = %q, want %q", tt.in, got, tt.want)
		}
		if got := strings.Join(k.Variables(), ","); got != strings.Join(tt.vars, ",") {
			t.Errorf("ParseKey(%q).Variables() = %q, want %q", tt.in, got, tt.vars)
		}
	}
}

func TestParseKeyErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "empty key"},
		{"hots", `unknown variable "$hots"`},
		{"$foo", "supported: $host, $binary_remote_addr, $remote_addr, $http_NAME, $arg_NAME"},
		{"$http_", `unknown variable "$http_"`},
		{"$arg_", `unknown variable "$arg_"`},
		{"$host$", `not followed by a variable name`},
		{"${host", `unterminated`},
		{"${}", `is not a variable name`},
		{"${ho-st}", `is not a variable name`},
	}
	for _, tt := range tests {
		_, err := ParseKey(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseKey(%q) error = %v, want one containing %q", tt.in, err, tt.want)
		}
	}
}

func TestKeyAppend(t *testing.T) {
	req := func(host, remote string, h http.Header) *http.Request {
		if h == nil {
			h = http.Header{}
		}
		return &http.Request{Host: host, RemoteAddr: remote, Header: h}
	}
	tests := []struct {
		key  string
		r    *http.Request
		want string
	}{
		{"$host", req("Site1.Example.COM", "", nil), "site1.example.com"},
		{"$host", req("site1.example.com:8080", "", nil), "site1.example.com"},
		{"$host", req("site1.example.com.", "", nil), "site1.example.com"},
		{"$host", req("site1.example.com.:80", "", nil), "site1.example.com"},
		{"$host", req("[::1]:8080", "", nil), "[::1]"},
		{"$host", req("[FE80::1]", "", nil), "[fe80::1]"},
		{"$host", req("", "", nil), ""},
		{"$host", req("a..b", "", nil), ""},
		{"$host", req(".", "", nil), ""},
		{"$host", req(":80", "", nil), ""},
		{"$host", req("a:99999", "", nil), ""},
		{"$host", req("a b", "", nil), ""},
		{"$host", req("[::1", "", nil), ""},
		{"$host", req("[::1]x", "", nil), ""},
		{"$host", req("x%41", "", nil), "x%41"},
		{"$host", req(".lead", "", nil), ".lead"},
		{"$binary_remote_addr", req("", "10.1.2.3:5555", nil), "\x0a\x01\x02\x03"},
		{"$binary_remote_addr", req("", "[::1]:5555", nil), "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01"},
		{"$binary_remote_addr", req("", "@", nil), ""},
		{"$remote_addr", req("", "10.1.2.3:5555", nil), "10.1.2.3"},
		{"$remote_addr", req("", "[2001:db8::1]:5555", nil), "2001:db8::1"},
		{"$remote_addr", req("", "2001:db8::1", nil), "2001:db8::1"},
		{"$http_x_tenant", req("", "", http.Header{"X-Tenant": {"acme"}}), "acme"},
		{"$http_x_tenant", req("", "", http.Header{"X-Tenant": {"a", "b"}}), "a, b"},
		{"$http_x_tenant", req("", "", nil), ""},
		{"$http_cookie", req("", "", http.Header{"Cookie": {"a=1", "b=2"}}), "a=1; b=2"},
		{"$http_host", req("Site1:80", "", nil), "Site1:80"},
		{"$host$binary_remote_addr", req("S1", "10.0.0.1:1", nil), "s1\x0a\x00\x00\x01"},
		{"t-${host}x", req("S1", "", nil), "t-s1x"},
	}
	for _, tt := range tests {
		k, err := ParseKey(tt.key)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(k.Append(nil, tt.r)); got != tt.want {
			t.Errorf("%s for Host %q RemoteAddr %q = %q, want %q", tt.key, tt.r.Host, tt.r.RemoteAddr, got, tt.want)
		}
	}
}

// TestKeyAppendArg holds $arg_NAME to nginx's ngx_http_arg: the first
// argument of that name with "=", its raw value up to "&".
func TestKeyAppendArg(t *testing.T) {
	tests := []struct{ key, query, want string }{
		{"$arg_c", "c=2", "2"},
		{"$arg_c", "a=1&c=2&c=3", "2"},
		{"$arg_c", "C=2", "2"},
		{"$arg_C", "c=2", "2"},
		{"$arg_c", "c&c=3", "3"},
		{"$arg_c", "bc=1&c=4", "4"},
		{"$arg_c", "c=", ""},
		{"$arg_c", "c=a%20b+c", "a%20b+c"},
		{"$arg_c", "c=1;d=2", "1;d=2"},
		{"$arg_c", "", ""},
		{"$arg_c", "cc=1", ""},
		{"$arg_site", "site=s1&x=y", "s1"},
		{"k-$arg_a-$arg_b", "b=2&a=1", "k-1-2"},
	}
	for _, tt := range tests {
		k, err := ParseKey(tt.key)
		if err != nil {
			t.Fatal(err)
		}
		r := &http.Request{URL: &url.URL{Path: "/", RawQuery: tt.query}, Header: http.Header{}}
		if got := string(k.Append(nil, r)); got != tt.want {
			t.Errorf("%s for query %q = %q, want %q", tt.key, tt.query, got, tt.want)
		}
	}
}

func TestKeyAppendDoesNotAllocate(t *testing.T) {
	k, err := ParseKey("$host$binary_remote_addr$remote_addr$http_x_tenant")
	if err != nil {
		t.Fatal(err)
	}
	r := &http.Request{Host: "Site1.Example.com:443", RemoteAddr: "[2001:db8::1]:5555", Header: http.Header{"X-Tenant": {"a", "b"}}}
	buf := make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(100, func() { buf = k.Append(buf[:0], r) })
	if allocs != 0 {
		t.Errorf("Append allocated %v times per run, want 0", allocs)
	}
}

func TestNormalizeHost(t *testing.T) {
	if got, ok := NormalizeHost("EXAMPLE.org.:443"); !ok || got != "example.org" {
		t.Errorf(`NormalizeHost("EXAMPLE.org.:443") = %q, %v; want "example.org", true`, got, ok)
	}
	if ValidHost("exa mple") || !ValidHost("a_b~c") {
		t.Errorf("ValidHost: want false for a space and true for _ and ~")
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want Rate
	}{
		{"10r/s", 10000},
		{"1r/s", 1000},
		{"30r/m", 500},
		{"1r/m", 16}, // 1000/60 rounded down, as nginx does
		{"7r/m", 116},
		{"60r/m", 1000},
		{"10", 10000}, // nginx reads a bare number as r/s
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "0r/s", "0r/m", "-1r/s", "r/s", "10r/h", "ten", "1.5r/s", " 1r/s", "99999999999999999999r/s"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) succeeded, want an error", bad)
		} else if !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseRate(%q) error %q does not quote the input", bad, err)
		}
	}
	if _, err := ParseRate("fast"); err == nil || !strings.Contains(err.Error(), "e.g. 10r/s") {
		t.Errorf("ParseRate(fast) error = %v, want an example", err)
	}
}

func TestRateString(t *testing.T) {
	for _, s := range []string{"10r/s", "30r/m", "1r/m", "7r/m", "59r/m"} {
		r, err := ParseRate(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.String(); got != s {
			t.Errorf("ParseRate(%q).String() = %q", s, got)
		}
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"10m", 10 << 20},
		{"10M", 10 << 20},
		{"512k", 512 << 10},
		{"512K", 512 << 10},
		{"1048576", 1048576},
		{"0", 0},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "m", "10g", "10mb", "-1", "1.5m", "99999999999999999m", " 1"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) succeeded, want an error", bad)
		} else if !strings.Contains(err.Error(), "e.g. 10m") {
			t.Errorf("ParseSize(%q) error %q gives no example", bad, err)
		}
	}
}

func TestZoneModel(t *testing.T) {
	tests := []struct {
		zone      string
		head, key int
		min, max  int64
	}{
		{"10m", connNodeHead, 10, 155_000, 165_000}, // nginx: 10m ≈ 160,000 short keys
		{"1m", connNodeHead, 4, 16_000, 16_500},
		{"10m", reqNodeHead, 16, 78_000, 82_000},
	}
	for _, tt := range tests {
		size, _ := ParseSize(tt.zone)
		budget := connZoneBudget
		if tt.head == reqNodeHead {
			budget = reqZoneBudget
		}
		n := budget(size) / nodeCost(tt.head+tt.key)
		if n < tt.min || n > tt.max {
			t.Errorf("zone %s holds %d nodes of a %d-byte key, want %d..%d", tt.zone, n, tt.key, tt.min, tt.max)
		}
	}
	for _, tt := range []struct {
		n    int
		want int64
	}{{36, 64}, {64, 64}, {65, 128}, {291, 512}, {2048, 2048}, {2049, 4096}, {80 + 65535, 65536 + 4096}} {
		if got := nodeCost(tt.n); got != tt.want {
			t.Errorf("nodeCost(%d) = %d, want %d", tt.n, got, tt.want)
		}
	}
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"$host", "host", "${host}x", "$http_x_a$remote_addr", "$", "${", "a$b", "$host$binary_remote_addr"} {
		f.Add(s, "Ex.COM.:80", "[::1]:9")
	}
	f.Fuzz(func(t *testing.T, s, host, remote string) {
		k, err := ParseKey(s)
		if err != nil {
			return
		}
		k2, err := ParseKey(k.String())
		if err != nil {
			t.Fatalf("ParseKey(%q) = %q, which does not parse: %v", s, k.String(), err)
		}
		if k2.String() != k.String() {
			t.Fatalf("round trip %q → %q → %q", s, k.String(), k2.String())
		}
		r := &http.Request{Host: host, RemoteAddr: remote, Header: http.Header{"X-A": {host}}}
		v1 := string(k.Append(nil, r))
		v2 := string(k2.Append([]byte("prefix"), r))
		if "prefix"+v1 != v2 {
			t.Fatalf("%q and its round trip give %q and %q", s, v1, v2)
		}
		if h, ok := NormalizeHost(host); ok {
			if h == "" || strings.ToLower(h) != h || (utf8.ValidString(host) && !utf8.ValidString(h)) {
				t.Fatalf("NormalizeHost(%q) = %q", host, h)
			}
			if h2, ok := NormalizeHost(h); !ok || h2 != h {
				t.Fatalf("NormalizeHost(%q) = %q, but NormalizeHost of that = %q, %v", host, h, h2, ok)
			}
		}
	})
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"10r/s", "30r/m", "1r/m", "0r/s", "10", "r/s", "9223372036854775807r/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			return
		}
		if r <= 0 {
			t.Fatalf("ParseRate(%q) = %d, want > 0", s, r)
		}
		r2, err := ParseRate(r.String())
		if err != nil || r2 != r {
			t.Fatalf("ParseRate(%q) = %d; its String %q reads back as %d, %v", s, r, r.String(), r2, err)
		}
	})
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"10m", "512k", "1048576", "", "m", "9223372036854775807", "8796093022208m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
		digits := strings.TrimRight(s, "kKmM")
		if len(s)-len(digits) > 1 {
			t.Fatalf("ParseSize(%q) accepted two units", s)
		}
	})
}

func TestKeyDisplayDistinct(t *testing.T) {
	k, err := ParseKey("$http_x_tenant")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, raw := range []string{"acme", `a\x01`, "a\x01", "a\\", "a\xff", "é", "\x00"} {
		got := k.Display(raw)
		if prev, dup := seen[got]; dup {
			t.Errorf("Display(%q) = Display(%q) = %q", raw, prev, got)
		}
		seen[got] = raw
	}
	if got := k.Display("acme"); got != "acme" {
		t.Errorf("Display(acme) = %q, want it unchanged", got)
	}
}
