package limiterproxy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"stampede/internal/nginxtest"
	"stampede/limit"
)

// TestConformanceLeanWithNginx plays every conformance case through the
// proxy on NewLeanServer and through nginx, and compares every status, as
// TestConformanceWithNginx does for NewServer.
func TestConformanceLeanWithNginx(t *testing.T) {
	nginxtest.Require(t)
	if c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).Dial("tcp", "127.0.0.1:1"); err == nil {
		c.Close()
	} else if strings.Contains(err.Error(), "assign requested address") {
		t.Skipf("cannot send from 127.0.0.2 on this system: %v", err)
	}
	up, upstream := startConfUpstream(t)
	cl := &clients{m: map[string]*http.Client{}}
	for _, tc := range confCases {
		t.Run(tc.name, func(t *testing.T) {
			goGot, _ := play(t, up, cl, startLeanProxy(t, tc.cfg, upstream.URL, tc.readTimeout), tc.waves)
			ngGot, _ := play(t, up, cl, startNginx(t, tc.cfg, upstream.Listener.Addr().String(), tc.readTimeout), tc.waves)
			for w := range tc.waves {
				for g, want := range ngGot[w] {
					if !slices.Equal(goGot[w][g], want) {
						t.Errorf("wave %d, %s: stampede (lean) %v, nginx %v", w, g, goGot[w][g], want)
					}
				}
			}
		})
	}
}

// startLeanProxy is startGoProxy on NewLeanServer.
func startLeanProxy(t *testing.T, cfg limit.Config, upstream string, readTimeout time.Duration) string {
	t.Helper()
	p, err := limit.NewPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("127.0.0.1:0", ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	srv := NewLeanServer(&Handler{Policy: p, Next: NewProxy(mustURL(t, upstream), ProxyOptions{ReadTimeout: readTimeout})}, ServerOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, srv, ln, 5*time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("stampede proxy (lean): %v", err)
		}
		if got := p.Busiest(10); len(got) != 0 {
			t.Errorf("stampede proxy (lean): keys still in flight after the run: %s", fmt.Sprint(got))
		}
	})
	return "http://" + ln.Addr().String()
}
