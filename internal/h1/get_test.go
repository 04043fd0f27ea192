package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"stampede/internal/memnet"
)

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
			st, err := c.Get(context.Background(), s.uri, "Site.example", func(name, value []byte) {
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
			if st, err := rc.Get(context.Background(), "/", "h", nil); err != nil || st != 200 {
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
