package h1

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"stampede/internal/memnet"
)

// TestClient sends GETs through Client to a net/http server over
// memnet and checks what the server saw and what came back: keep-alive
// reuse, Connection: close, a connection the server closed while idle
// (sent again on a new one), and a request whose context ends.
func TestClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := memnet.Listen(memnet.Options{})
		var conns atomic.Int32
		srv := &http.Server{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/close":
					w.Header().Set("Connection", "close")
				case "/slow":
					select {
					case <-r.Context().Done():
					case <-time.After(time.Minute):
					}
				}
				io.WriteString(w, r.Host+" "+r.URL.RequestURI())
			}),
			ConnState: func(c net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			},
			IdleTimeout: 10 * time.Second,
		}
		go srv.Serve(ln)
		defer srv.Close()
		from := netip.MustParseAddr("10.0.0.9")
		lc := &Client{Dial: func(ctx context.Context) (net.Conn, error) { return ln.Dial(ctx, from) }, MaxIdle: 4}
		defer lc.CloseIdleConnections()
		get := func(step, path string, ctx context.Context) (string, error) {
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://x"+path, nil)
			req.Host = "site.example"
			resp, err := lc.RoundTrip(req)
			if err != nil {
				return "", err
			}
			b, _ := io.ReadAll(resp.Body)
			return string(b), nil
		}
		steps := []struct {
			step, path string
			sleep      time.Duration
			conns      int32
		}{
			{"first", "/a?x=1", 0, 1},
			{"reused", "/b", 0, 1},
			{"close", "/close", 0, 1},
			{"after close", "/c", 0, 2},
			{"after the server closed it idle", "/d", 20 * time.Second, 3},
		}
		for _, s := range steps {
			time.Sleep(s.sleep)
			synctest.Wait()
			got, err := get(s.step, s.path, context.Background())
			if want := "site.example " + s.path; err != nil || got != want {
				t.Errorf("step %s: got %q, %v; want %q", s.step, got, err, want)
			}
			if n := conns.Load(); n != s.conns {
				t.Errorf("step %s: server saw %d connections, want %d", s.step, n, s.conns)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		if _, err := get("cancelled", "/slow", ctx); err == nil || time.Since(start) != time.Second {
			t.Errorf("step cancelled: err %v after %v, want an error after 1s", err, time.Since(start))
		}
	})
}
