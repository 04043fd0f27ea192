package scenarios

import (
	"strings"
	"testing"
	"time"

	"stampede/workerpool"
)

// TestGunicornFields reads the backend's gunicorn settings and the proxy's
// connect timeout, writes them back, and reads them again.
func TestGunicornFields(t *testing.T) {
	src := withLine(4, "  workers: 2\n  threads: 4\n  boot: 500ms\n  max_requests: 5000\n  max_requests_jitter: 500\n  backlog_overflow: reset") +
		"" // the proxy line follows below
	src = strings.Replace(src, "proxy:\n", "proxy:\n  connect_timeout: 5s\n", 1)
	sc := mustParse(t, "t.yaml", src)
	b := sc.Backend
	if b.Threads != 4 || b.Boot != 500*time.Millisecond || b.MaxRequests != 5000 || b.MaxRequestsJitter != 500 || b.Overflow != workerpool.Reset {
		t.Errorf("backend %+v: want threads 4, boot 500ms, max_requests 5000 ± 500, reset", b)
	}
	if sc.Proxy.ConnectTimeout != 5*time.Second {
		t.Errorf("connect_timeout %v, want 5s", sc.Proxy.ConnectTimeout)
	}
	cfg := b.PoolConfig()
	if cfg.Threads != 4 || cfg.Boot != b.Boot || cfg.MaxRequests != 5000 || cfg.MaxRequestsJitter != 500 || cfg.Overflow != workerpool.Reset {
		t.Errorf("PoolConfig %+v: the fields did not carry over", cfg)
	}
	_, again := formatted(t, sc)
	if again.Backend.Threads != 4 || again.Backend.Overflow != workerpool.Reset || again.Proxy.ConnectTimeout != 5*time.Second || again.Backend.Boot != b.Boot {
		t.Errorf("formatted and read again: %+v %+v", again.Backend, again.Proxy)
	}

	// Defaults: a sync worker, the measured boot, no recycling, drop,
	// nginx's 60 s.
	sc = mustParse(t, "t.yaml", base)
	if b := sc.Backend; b.Threads != 1 || b.Boot != workerpool.DefaultBoot || b.MaxRequests != 0 || b.Overflow != workerpool.Drop || sc.Proxy.ConnectTimeout != 60*time.Second {
		t.Errorf("defaults: backend %+v, connect timeout %v", b, sc.Proxy.ConnectTimeout)
	}

	for _, c := range []struct {
		line int
		text string
		want string
	}{
		{4, "  workers: 2\n  backlog_overflow: abort", `backend.backlog_overflow: "abort" is not drop or reset`},
		{4, "  workers: 2\n  threads: 0", "backend.threads: 0 is below 1"},
		{4, "  workers: 2\n  max_requests: -1", "backend.max_requests: -1 is below 0"},
		{4, "  workers: 2\n  boot: soon", "backend.boot:"},
		{8, "proxy:\n  connect_timeout: 0s", "proxy.connect_timeout: 0s: nginx cannot turn proxy_connect_timeout off"},
	} {
		_, err := Parse("t.yaml", []byte(withLine(c.line, c.text)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.text, err, c.want)
		}
	}
}
