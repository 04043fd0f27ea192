package limiterproxy

import (
	"io"
	"strings"
	"testing"
	"time"

	"stampede/internal/nginxtest"
	"stampede/limit"
)

// TestKeepAliveNginx plays the keep-alive scenarios of TestKeepAlive
// through real nginx, configured by WriteNginx with the same keepalive N,
// and holds what the upstream saw to what it sees through NewProxy:
// connections opened for a sequence of requests, a "Connection: close"
// answer not reused, idle connections beyond N closed, an idle connection
// the upstream closed replaced, and which dropped requests go again.
// nginx runs one worker, whose pool is the proxy's.
func TestKeepAliveNginx(t *testing.T) {
	nginxtest.Require(t)
	for _, sc := range kaScenarios {
		t.Run(sc.name, func(t *testing.T) {
			u := startKAUpstream(t)
			base := nginxtest.Start(t, func(w io.Writer, listen string) error {
				var b strings.Builder
				err := WriteNginx(&b, limit.Config{}, NginxOptions{Listen: listen, Upstream: u.addr(), ReadTimeout: 10 * time.Second, UpstreamKeepAlive: sc.n})
				if err != nil {
					return err
				}
				_, err = io.WriteString(w, strings.Replace(b.String(), "worker_processes auto;", "worker_processes 1;", 1))
				return err
			})
			// nginxtest.Start's readiness probe is a connection to nginx,
			// not to the upstream: the upstream's counts start at zero.
			got := playKA(t, sc, u, base)
			if got.String() != sc.want.String() {
				t.Errorf("nginx: %v\nwant    %v", got, sc.want)
			}
		})
	}
}
