package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
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
		lc, conns := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/close":
				w.Header().Set("Connection", "close")
			case "/slow":
				select {
				case <-r.Context().Done():
				case <-time.After(time.Minute):
				}
			}
			w.Header().Set("X-Seen", r.Host+" "+r.URL.RequestURI())
			io.WriteString(w, "a body read to its end")
		}))
		get := func(step, path string, ctx context.Context) (string, error) {
			var seen string
			_, err := lc.GetBy(ctx, time.Time{}, path, "site.example", func(name, value []byte) {
				if string(name) == "X-Seen" {
					seen = string(value)
				}
			})
			return seen, err
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

// serve serves h over memnet, with an idle timeout of 10 s, until the test
// ends, and returns a Client of it that keeps up to 4 idle connections,
// and the count of connections the server has accepted. It is called in a
// synctest bubble.
func serve(t *testing.T, h http.Handler) (*Client, *atomic.Int32) {
	ln := memnet.Listen(memnet.Options{})
	conns := new(atomic.Int32)
	srv := &http.Server{
		Handler: h,
		ConnState: func(c net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		},
		IdleTimeout: 10 * time.Second,
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	from := netip.MustParseAddr("10.0.0.9")
	c := &Client{Dial: func(ctx context.Context) (net.Conn, error) { return ln.Dial(ctx, from) }, MaxIdle: 4}
	t.Cleanup(c.CloseIdleConnections)
	return c, conns
}

// TestClientBurstTakesReturned holds a request that finds every connection
// busy to the first connection it can have: one that an exchange puts back
// while its own dial still hangs, which then joins the pool when it ends.
func TestClientBurstTakesReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, conns := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				time.Sleep(time.Second)
			}
		}))
		dial := c.Dial
		hold := make(chan struct{})
		var dials atomic.Int32
		c.Dial = func(ctx context.Context) (net.Conn, error) {
			if dials.Add(1) > 1 {
				<-hold
			}
			return dial(ctx)
		}
		get := func(path string) error {
			st, err := c.GetBy(context.Background(), time.Time{}, path, "h", nil)
			if err == nil && st != 200 {
				err = fmt.Errorf("status %d", st)
			}
			return err
		}
		if err := get("/"); err != nil {
			t.Fatalf("step first: %v", err)
		}
		slow := make(chan error)
		go func() { slow <- get("/slow") }()
		synctest.Wait() // the slow request holds the only connection
		start := time.Now()
		if err := get("/"); err != nil || time.Since(start) != time.Second {
			t.Errorf("step burst: %v after %v, want the connection put back after 1s", err, time.Since(start))
		}
		if err := <-slow; err != nil {
			t.Errorf("step slow: %v", err)
		}
		close(hold)
		synctest.Wait()
		if n := len(c.idle); n != 2 {
			t.Errorf("step dial ended: %d idle connections, want 2 (the dial's joined the pool)", n)
		}
		if n := conns.Load(); n != 2 {
			t.Errorf("step dial ended: server saw %d connections, want 2", n)
		}
	})
}

// TestClientMaxDials holds a burst to MaxDials dials at once, and every
// request of it to an answer once the dials come through.
func TestClientMaxDials(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		c.MaxDials = 1
		dial := c.Dial
		hold := make(chan struct{})
		var dials atomic.Int32
		c.Dial = func(ctx context.Context) (net.Conn, error) {
			dials.Add(1)
			<-hold
			return dial(ctx)
		}
		errs := make(chan error, 3)
		for range 3 {
			go func() {
				_, err := c.GetBy(context.Background(), time.Time{}, "/", "h", nil)
				errs <- err
			}()
		}
		synctest.Wait()
		if n := dials.Load(); n != 1 {
			t.Errorf("step burst: %d dials in progress, want 1", n)
		}
		close(hold)
		for i := range 3 {
			if err := <-errs; err != nil {
				t.Errorf("step answers: request %d: %v", i, err)
			}
		}
	})
}

// TestGet sends GETs through Client.Get to a net/http server over memnet
// and checks each answer's status, the headers passed on, and whether the
// connection was kept: a sized body, a chunked one, Connection: close, a
// 204, and an HTTP/1.0 answer from a raw server.
func TestGet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, conns := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Seen", r.Host+" "+r.URL.RequestURI())
			switch r.URL.Path {
			case "/chunked":
				w.WriteHeader(http.StatusAccepted)
				w.(http.Flusher).Flush()
				io.WriteString(w, strings.Repeat("x", 10000))
			case "/close":
				w.Header().Set("Connection", "close")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, "no")
			case "/empty":
				w.WriteHeader(http.StatusNoContent)
			default:
				io.WriteString(w, "ok")
			}
		}))
		for i, s := range []struct {
			uri    string
			status int
			conns  int32 // the server's connections after the step
		}{
			{"/a?x=1", 200, 1},
			{"/chunked", 202, 1},
			{"/empty", 204, 1},
			{"/close", 503, 1},
			{"/b", 200, 2},
		} {
			seen := ""
			st, err := c.GetBy(context.Background(), time.Time{}, s.uri, "Site.example", func(name, value []byte) {
				if strings.EqualFold(string(name), "x-seen") {
					seen = string(value)
				}
			})
			if err != nil || st != s.status || seen != "Site.example "+s.uri {
				t.Errorf("step %d %s: status %d, X-Seen %q, %v; want %d, %q", i, s.uri, st, seen, err, s.status, "Site.example "+s.uri)
			}
			synctest.Wait()
			if n := conns.Load(); n != s.conns {
				t.Errorf("step %d %s: server saw %d connections, want %d", i, s.uri, n, s.conns)
			}
		}

		// HTTP/1.0 without keep-alive, and a body to the connection's end.
		raw := memnet.Listen(memnet.Options{})
		defer raw.Close()
		go func() {
			for {
				nc, err := raw.Accept()
				if err != nil {
					return
				}
				br := bufio.NewReader(nc)
				for {
					line, err := br.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				fmt.Fprint(nc, "HTTP/1.0 200 OK\r\nX-Seen: raw\r\n\r\nto the end")
				nc.Close()
			}
		}()
		rc := &Client{Dial: func(ctx context.Context) (net.Conn, error) { return raw.DialContext(ctx, "", "") }, MaxIdle: 4}
		for i := range 2 {
			if st, err := rc.GetBy(context.Background(), time.Time{}, "/", "h", nil); err != nil || st != 200 {
				t.Errorf("HTTP/1.0 step %d: status %d, %v; want 200", i, st, err)
			}
		}
		if n := len(rc.idle); n != 0 {
			t.Errorf("HTTP/1.0: %d idle connections kept, want none", n)
		}
	})
}

// TestGetBy holds Client.GetBy to its deadline, and a SharedContext client
// to its promises: requests under one context reuse one connection, a
// context that ends while the connection is idle costs that connection and
// not the next request, and a context's end aborts an exchange at once.
func TestGetBy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, conns := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				select {
				case <-r.Context().Done():
				case <-time.After(time.Minute):
				}
			}
		}))
		c.SharedContext = true
		c.NoRetry = true // a stale connection reused would fail the step, not be retried
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		if _, err := c.GetBy(ctx, start.Add(time.Second), "/slow", "h", nil); !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) != time.Second {
			t.Errorf("step deadline: err %v after %v, want os.ErrDeadlineExceeded after 1s", err, time.Since(start))
		}
		for i := range 3 {
			if st, err := c.GetBy(ctx, time.Now().Add(time.Second), "/", "h", nil); err != nil || st != 200 {
				t.Errorf("step shared %d: status %d, %v; want 200", i, st, err)
			}
		}
		synctest.Wait()
		if n := conns.Load(); n != 2 {
			t.Errorf("step shared: server saw %d connections, want 2 (one cut by the deadline, one reused)", n)
		}
		cancel()
		synctest.Wait()
		if st, err := c.GetBy(context.Background(), time.Time{}, "/", "h", nil); err != nil || st != 200 {
			t.Errorf("step after the context ended while idle: status %d, %v; want 200", st, err)
		}
		synctest.Wait()
		if n := conns.Load(); n != 3 {
			t.Errorf("step after the context ended while idle: server saw %d connections, want 3", n)
		}
		ctx, cancel = context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		start = time.Now()
		if _, err := c.GetBy(ctx, time.Time{}, "/slow", "h", nil); err == nil || time.Since(start) != time.Second {
			t.Errorf("step cancelled: err %v after %v, want an error after 1s", err, time.Since(start))
		}
	})
}
