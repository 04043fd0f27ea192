package scenarios

import (
	"strings"
	"testing"
)

// TestUpstreamKeepAlive reads proxy.upstream_keepalive: 0 (off) by
// default, as nginx; a number within bounds is kept and written back by
// Format; one out of them is refused at its line.
func TestUpstreamKeepAlive(t *testing.T) {
	if n := mustParse(t, "base.yaml", base).Proxy.UpstreamKeepAlive; n != 0 {
		t.Errorf("default: %d, want 0", n)
	}
	sc := mustParse(t, "set.yaml", withLine(9, "  limit_conn: {key: $host, per_key: 2}\n  upstream_keepalive: 32"))
	if n := sc.Proxy.UpstreamKeepAlive; n != 32 {
		t.Errorf("set: %d, want 32", n)
	}
	if out, _ := formatted(t, sc); !strings.Contains(out, "upstream_keepalive: 32") {
		t.Errorf("Format() lacks upstream_keepalive: 32:\n%s", out)
	}
	for _, bad := range []string{"-1", "4097", "many"} {
		checkParseError(t, bad, "bad.yaml", withLine(9, "  limit_conn: {key: $host, per_key: 2}\n  upstream_keepalive: "+bad), "bad.yaml:10:23: proxy.upstream_keepalive")
	}
}
