package limit

import "testing"

func TestNormalizeHost(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"EXAMPLE.org.:443", "example.org"},
		{"example.org.:443", "example.org"},
		{"example.org", "example.org"},
		{"Example.org", "example.org"},
		{"[::1]:8080", "[::1]"},
		{"[FE80::1]", "[fe80::1]"},
	} {
		if got, ok := NormalizeHost(c.in); !ok || got != c.want {
			t.Errorf("NormalizeHost(%q) = %q, %v; want %q, true", c.in, got, ok, c.want)
		}
	}
	if _, ok := NormalizeHost("exa..mple"); ok {
		t.Errorf(`NormalizeHost("exa..mple"): ok, want rejected as nginx does`)
	}
	// The proxy asks for every request's $host: a lower-case host, as
	// clients send them, costs no allocation.
	if n := testing.AllocsPerRun(100, func() { NormalizeHost("shop.example.com:8080") }); n != 0 {
		t.Errorf("NormalizeHost of a lower-case host: %v allocations, want 0", n)
	}
	if ValidHost("exa mple") || !ValidHost("a_b~c") {
		t.Errorf("ValidHost: want false for a space and true for _ and ~")
	}
}
