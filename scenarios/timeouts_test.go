package scenarios

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestProxyTimeouts reads proxy.send_timeout, client_body_timeout and
// client_header_timeout, defaulting each to nginx's 60s, and refuses a
// zero one (nginx cannot turn them off) with its line and column.
func TestProxyTimeouts(t *testing.T) {
	if p := mustParse(t, "base.yaml", base).Proxy; p.SendTimeout != time.Minute || p.ClientBodyTimeout != time.Minute || p.ClientHeaderTimeout != time.Minute {
		t.Errorf("defaults: send %v, client body %v, client header %v; want 1m0s each", p.SendTimeout, p.ClientBodyTimeout, p.ClientHeaderTimeout)
	}
	set := withLine(9, "  limit_conn: {key: $host, per_key: 2}\n  send_timeout: 5s\n  client_body_timeout: 2s\n  client_header_timeout: 3s")
	sc := mustParse(t, "set.yaml", set)
	if p := sc.Proxy; p.SendTimeout != 5*time.Second || p.ClientBodyTimeout != 2*time.Second || p.ClientHeaderTimeout != 3*time.Second {
		t.Errorf("set: send %v, client body %v, client header %v; want 5s 2s 3s", p.SendTimeout, p.ClientBodyTimeout, p.ClientHeaderTimeout)
	}
	out, _ := formatted(t, sc)
	for _, want := range []string{"send_timeout: 5s", "client_body_timeout: 2s", "client_header_timeout: 3s"} {
		if !strings.Contains(out, want) {
			t.Errorf("Format() lacks %q:\n%s", want, out)
		}
	}
	for _, key := range []string{"send_timeout", "client_body_timeout", "client_header_timeout"} {
		want := "zero.yaml:10:" + strconv.Itoa(len(key)+5) + ": proxy." + key + ": 0s: want a duration above 0"
		checkParseError(t, key+": 0s", "zero.yaml", withLine(9, "  limit_conn: {key: $host, per_key: 2}\n  "+key+": 0s"), want)
	}
}
