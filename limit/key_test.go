package limit

import (
	"net/netip"
	"net/textproto"
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
	req := func(host, addr string, h map[string][]string) *Request {
		r := &Request{Host: host, Header: h}
		if addr != "" {
			r.Addr = netip.MustParseAddr(addr)
		}
		return r
	}
	tests := []struct {
		key  string
		r    *Request
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
		{"$binary_remote_addr", req("", "10.1.2.3", nil), "\x0a\x01\x02\x03"},
		{"$binary_remote_addr", req("", "::1", nil), "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01"},
		{"$binary_remote_addr", req("", "", nil), ""},
		{"$binary_remote_addr", req("", "::ffff:10.1.2.3", nil), "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\x0a\x01\x02\x03"},
		{"$remote_addr", req("", "fe80::1%eth0", nil), "fe80::1"},
		{"$remote_addr", req("", "10.1.2.3", nil), "10.1.2.3"},
		{"$remote_addr", req("", "2001:db8::1", nil), "2001:db8::1"},
		{"$remote_addr", req("", "", nil), ""},
		{"$http_x_tenant", req("", "", map[string][]string{"X-Tenant": {"acme"}}), "acme"},
		{"$http_x_tenant", req("", "", map[string][]string{"X-Tenant": {"a", "b"}}), "a, b"},
		{"$http_x_tenant", req("", "", nil), ""},
		{"$http_cookie", req("", "", map[string][]string{"Cookie": {"a=1", "b=2"}}), "a=1; b=2"},
		{"$http_host", req("Site1:80", "", nil), "Site1:80"},
		{"$host$binary_remote_addr", req("S1", "10.0.0.1", nil), "s1\x0a\x00\x00\x01"},
		{"t-${host}x", req("S1", "", nil), "t-s1x"},
	}
	for _, tt := range tests {
		k, err := ParseKey(tt.key)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(k.Append(nil, tt.r)); got != tt.want {
			t.Errorf("%s for Host %q Addr %v Query %q = %q, want %q", tt.key, tt.r.Host, tt.r.Addr, tt.r.Query, got, tt.want)
		}
	}
}

// TestKeyAppendArg evaluates $arg_NAME as nginx's ngx_http_arg does: the
// first argument of that name with "=", its raw value up to "&". Each
// query of a row gives the row's want.
func TestKeyAppendArg(t *testing.T) {
	for _, tt := range []struct {
		key, want string
		queries   []string
	}{
		{"$arg_c", "2", []string{"c=2", "a=1&c=2&c=3", "C=2"}},
		{"$arg_C", "2", []string{"c=2"}},
		{"$arg_c", "3", []string{"c&c=3"}},
		{"$arg_c", "4", []string{"bc=1&c=4"}},
		{"$arg_c", "", []string{"c=", "", "cc=1"}},
		{"$arg_c", "a%20b+c", []string{"c=a%20b+c"}},
		{"$arg_c", "1;d=2", []string{"c=1;d=2"}},
		{"$arg_site", "s1", []string{"site=s1&x=y"}},
		{"k-$arg_a-$arg_b", "k-1-2", []string{"b=2&a=1"}},
	} {
		k, err := ParseKey(tt.key)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range tt.queries {
			if got := string(k.Append(nil, &Request{Query: q})); got != tt.want {
				t.Errorf("%s for Query %q = %q, want %q", tt.key, q, got, tt.want)
			}
		}
	}
}

func TestKeyAppendDoesNotAllocate(t *testing.T) {
	k, err := ParseKey("$host$binary_remote_addr$remote_addr$http_x_tenant")
	if err != nil {
		t.Fatal(err)
	}
	r := &Request{Host: "Site1.Example.com:443", Addr: netip.MustParseAddr("2001:db8::1"), Header: map[string][]string{"X-Tenant": {"a", "b"}}}
	buf := make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(100, func() { buf = k.Append(buf[:0], r) })
	if allocs != 0 {
		t.Errorf("Append allocated %v times per run, want 0", allocs)
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
		r := &Request{Host: host, Header: map[string][]string{"X-A": {host}}, Query: host}
		if ap, err := netip.ParseAddrPort(remote); err == nil {
			r.Addr = ap.Addr()
		}
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

// FuzzCanonicalHeader holds canonicalHeader to net/http's canonical form
// for every name a $http_NAME variable can give.
func FuzzCanonicalHeader(f *testing.F) {
	for _, s := range []string{"x-tenant", "X_TENANT", "user-agent", "a--b", "-x", "x-", "1a-b2", "ÿ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name := strings.ReplaceAll(s, "_", "-")
		for i := 0; i < len(name); i++ {
			if !isVarByte(name[i]) && name[i] != '-' {
				return
			}
		}
		if got, want := canonicalHeader(name), textproto.CanonicalMIMEHeaderKey(name); got != want {
			t.Fatalf("canonicalHeader(%q) = %q, want %q as net/http", name, got, want)
		}
	})
}
