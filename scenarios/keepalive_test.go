package scenarios

import (
	"strings"
	"testing"
)

// TestUpstreamKeepAlive reads proxy.upstream_keepalive: 0 (off) by
// default, as nginx; a number within bounds is kept and written back by
// Format; one out of them is refused at its line.
func TestUpstreamKeepAlive(t *testing.T) {
	sc, err := Parse("base.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if n := sc.Proxy.UpstreamKeepAlive; n != 0 {
		t.Errorf("default: %d, want 0", n)
	}
	sc, err = Parse("set.yaml", []byte(withLine(9, "  limit_conn: {key: $host, per_key: 2}\n  upstream_keepalive: 32")))
	if err != nil {
		t.Fatal(err)
	}
	if n := sc.Proxy.UpstreamKeepAlive; n != 32 {
		t.Errorf("set: %d, want 32", n)
	}
	var out strings.Builder
	if err := sc.Format(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "upstream_keepalive: 32") {
		t.Errorf("Format() lacks upstream_keepalive: 32:\n%s", out.String())
	}
	for _, bad := range []string{"-1", "4097", "many"} {
		_, err := Parse("bad.yaml", []byte(withLine(9, "  limit_conn: {key: $host, per_key: 2}\n  upstream_keepalive: "+bad)))
		if want := "bad.yaml:10:23: proxy.upstream_keepalive"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", bad, err, want)
		}
	}
}
