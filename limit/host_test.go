package limit

import "testing"

func TestNormalizeHost(t *testing.T) {
	if got, ok := NormalizeHost("EXAMPLE.org.:443"); !ok || got != "example.org" {
		t.Errorf(`NormalizeHost("EXAMPLE.org.:443") = %q, %v; want "example.org", true`, got, ok)
	}
	if ValidHost("exa mple") || !ValidHost("a_b~c") {
		t.Errorf("ValidHost: want false for a space and true for _ and ~")
	}
}
