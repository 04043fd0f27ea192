package limiterproxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"stampede/limit"
)

// BenchmarkProxyServe measures the whole proxy as `stampede proxy` runs
// it, over loopback: clients on keep-alive connections, the hardened
// server, limit_conn $host, NewProxy, and an upstream answering 200 at
// once on keep-alive connections. "keepalive" keeps upstream connections
// (UpstreamKeepAlive 64), "off" opens one per request, nginx's default.
// Its CPU profile is the proxy's, beside the benchmark's own client and
// upstream.
func BenchmarkProxyServe(b *testing.B) {
	upstream := startReturn200(b, true)
	for _, mode := range []struct {
		name string
		n    int
	}{{"keepalive", 64}, {"off", 0}} {
		b.Run(mode.name, func(b *testing.B) {
			p := mustPolicy(b, limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 1000}}})
			opts := ServerOptions{WatchDelay: ProxyWatchDelay}
			ln, err := Listen("127.0.0.1:0", opts)
			if err != nil {
				b.Fatal(err)
			}
			rp := NewProxy(mustURL(b, "http://"+upstream), ProxyOptions{ReadTimeout: time.Minute, SendTimeout: time.Minute, UpstreamKeepAlive: mode.n})
			srv := NewLeanServer(&Handler{Policy: p, Next: rp}, opts)
			go srv.Serve(ln) //nolint:errcheck
			defer srv.Close()
			addr := ln.Addr().String()
			b.ReportAllocs()
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					b.Error(err)
					return
				}
				defer c.Close()
				br := bufio.NewReader(c)
				req, _ := http.NewRequest("GET", "http://site1/", nil)
				for pb.Next() {
					if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: site1\r\n\r\n"); err != nil {
						b.Error(err)
						return
					}
					resp, err := http.ReadResponse(br, req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body) //nolint:errcheck
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Errorf("status %d, want 200", resp.StatusCode)
						return
					}
				}
			})
		})
	}
}
