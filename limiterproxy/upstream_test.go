package limiterproxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestOneShotConnectionPerRequest checks nginx's default towards an
// upstream: every request on a new connection that says
// "Connection: close", and every connection closed after its response.
func TestOneShotConnectionPerRequest(t *testing.T) {
	states := make(chan http.ConnState, 64)
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !r.Close {
			t.Errorf("upstream request without Connection: close")
		}
		io.WriteString(w, "ok")
	}))
	backend.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew || s == http.StateClosed {
			states <- s
		}
	}
	backend.Start()
	defer backend.Close()
	front := httptest.NewServer(NewProxy(mustURL(t, backend.URL), ProxyOptions{}))
	defer front.Close()

	const n = 5
	for i := range n {
		if status, body, _ := get(t, front.Client(), front.URL, "site1"); status != 200 || body != "ok" {
			t.Fatalf("step %d: GET = %d %q, want 200 \"ok\"", i, status, body)
		}
	}
	opened, closed := 0, 0
	timeout := time.After(5 * time.Second)
	for opened < n || closed < n {
		select {
		case s := <-states:
			if s == http.StateNew {
				opened++
			} else {
				closed++
			}
		case <-timeout:
			t.Fatalf("upstream connections: %d opened, %d closed; want %d of each", opened, closed, n)
		}
	}
}

// TestOneShotBodies sends a request body up and streams a chunked response
// of a megabyte down, after an informational 103, which is not passed on.
func TestOneShotBodies(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up, err := io.ReadAll(r.Body)
		if err != nil || string(up) != "payload" {
			t.Errorf("upstream body %q, %v; want \"payload\"", up, err)
		}
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		w.WriteHeader(http.StatusCreated)
		for off := 0; off < len(big); off += 1 << 16 {
			w.Write(big[off : off+1<<16])
			http.NewResponseController(w).Flush()
		}
	}))
	defer backend.Close()
	front := httptest.NewServer(NewProxy(mustURL(t, backend.URL), ProxyOptions{ReadTimeout: 5 * time.Second}))
	defer front.Close()

	resp, err := front.Client().Post(front.URL+"/upload", "text/plain", strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	if resp.StatusCode != http.StatusCreated || !bytes.Equal(got, big) {
		t.Errorf("POST = %d with %d bytes, want 201 with the %d bytes sent", resp.StatusCode, len(got), len(big))
	}
}

// TestOneShotUpgrade checks that a connection upgrade (a WebSocket, say)
// is spliced through: the 101 comes back and bytes flow both ways.
func TestOneShotUpgrade(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" || r.Header.Get("Connection") != "Upgrade" || r.Close {
			http.Error(w, "want Upgrade: echo and Connection: Upgrade alone", http.StatusBadRequest)
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
		line, err := brw.ReadString('\n')
		if err != nil {
			return
		}
		io.WriteString(c, "echo: "+line)
	}))
	defer backend.Close()
	front := httptest.NewServer(NewProxy(mustURL(t, backend.URL), ProxyOptions{}))
	defer front.Close()

	c, err := net.Dial("tcp", strings.TrimPrefix(front.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: site1\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the upgrade answer: %v", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade answered %s, want 101", resp.Status)
	}
	io.WriteString(c, "ping\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "echo: ping\n" {
		t.Errorf("through the upgraded connection: %q, %v; want \"echo: ping\\n\"", line, err)
	}
}

func TestHostPort(t *testing.T) {
	for i, tt := range []struct{ url, want string }{
		{"http://127.0.0.1:8000/x", "127.0.0.1:8000"},
		{"http://app.internal/x", "app.internal:80"},
		{"http://[::1]/", "[::1]:80"},
		{"http://[::1]:9000/", "[::1]:9000"},
	} {
		req := httptest.NewRequest("GET", tt.url, nil)
		if got := hostPort(req.URL); got != tt.want {
			t.Errorf("step %d: hostPort(%s) = %q, want %q", i, tt.url, got, tt.want)
		}
	}
}

// TestOneShotDialsWithoutLookup checks that an upstream named by an IP
// address is dialled without a lookup, one named by a host name through
// the resolver, and that both reach it.
func TestOneShotDialsWithoutLookup(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer backend.Close()
	port := mustURL(t, backend.URL).Port()
	for i, tt := range []struct {
		upstream string
		direct   bool
	}{
		{"http://127.0.0.1:" + port, true},
		{"http://localhost:" + port, false},
	} {
		u := mustURL(t, tt.upstream)
		if got := newUpstreamTransport(u, &net.Dialer{}, 0, 0).addr.IsValid(); got != tt.direct {
			t.Errorf("step %d: %s dialled without a lookup: %v, want %v", i, tt.upstream, got, tt.direct)
		}
		front := httptest.NewServer(NewProxy(u, ProxyOptions{}))
		status, body, _ := get(t, front.Client(), front.URL, "site1")
		front.Close()
		if status != 200 || body != "ok" {
			t.Errorf("step %d: through %s: %d %q, want 200 \"ok\"", i, tt.upstream, status, body)
		}
	}
}

// TestOneShotEarlyAnswer checks that an upstream answering before it read
// the request body (a 413 for an upload too large) is heard, as it is
// through nginx, rather than answered 502 for the body it did not take.
func TestOneShotEarlyAnswer(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
	}))
	defer backend.Close()
	front := httptest.NewServer(NewProxy(mustURL(t, backend.URL), ProxyOptions{ReadTimeout: 5 * time.Second}))
	defer front.Close()
	body := bytes.Repeat([]byte("x"), 8<<20)
	req, _ := http.NewRequest("POST", front.URL+"/upload", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/octet-stream")
	if status, _, _ := do(t, front.Client(), req); status != http.StatusRequestEntityTooLarge {
		t.Errorf("POST of 8 MiB = %d, want the upstream's 413", status)
	}
}

// TestOneShotHeaderBound checks that an upstream sending headers without
// end is answered 502, not read into memory forever.
func TestOneShotHeaderBound(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		brw.WriteString("HTTP/1.1 200 OK\r\n")
		for i := 0; i < 1<<20; i++ { // 20 MiB of headers, unless the proxy hangs up
			if _, err := fmt.Fprintf(brw, "X-Filler-%d: %s\r\n", i, strings.Repeat("y", 8)); err != nil {
				return
			}
		}
		brw.Flush()
	}))
	defer backend.Close()
	front := httptest.NewServer(NewProxy(mustURL(t, backend.URL), ProxyOptions{}))
	defer front.Close()
	if status, _, _ := get(t, front.Client(), front.URL, "site1"); status != http.StatusBadGateway {
		t.Errorf("endless upstream headers: status %d, want 502", status)
	}
}

// BenchmarkProxyUpstream measures the proxy's upstream half: a request
// through NewProxy, served without a front server, to an upstream on
// loopback that answers 200 at once and closes, as nginx's `return 200`
// does to an HTTP/1.0 request. "floor" does the least any Go client can:
// dial, one write, http.ReadResponse, read the body, close. The ratio of
// the two is what the proxy adds to the platform's own cost.
func BenchmarkProxyUpstream(b *testing.B) {
	addr := startReturn200(b, false)

	b.Run("proxy", func(b *testing.B) {
		p := NewProxy(mustURL(b, "http://"+addr), ProxyOptions{ReadTimeout: time.Minute})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			r := httptest.NewRequest("GET", "http://site1/", nil)
			r.RemoteAddr = "127.0.0.1:5000"
			for pb.Next() {
				w := &discardWriter{h: http.Header{}}
				p.ServeHTTP(w, r)
			}
		})
	})
	b.Run("floor", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			d := &net.Dialer{KeepAlive: -1}
			r := httptest.NewRequest("GET", "http://site1/", nil)
			for pb.Next() {
				c, err := d.DialContext(r.Context(), "tcp", addr)
				if err != nil {
					b.Error(err)
					return
				}
				io.WriteString(c, "GET / HTTP/1.0\r\nHost: site1\r\nConnection: close\r\n\r\n") //nolint:errcheck
				resp, err := http.ReadResponse(bufio.NewReader(c), r)
				if err == nil {
					io.Copy(io.Discard, resp.Body) //nolint:errcheck
				}
				c.Close()
			}
		})
	})
}

// startReturn200 starts an upstream on loopback, closed when tb ends,
// that serveReturn200 answers, and returns its address.
func startReturn200(tb testing.TB, keepAlive bool) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go serveReturn200(ln, keepAlive)
	return ln.Addr().String()
}

// serveReturn200 answers every request on ln with 200 "ok\n" as nginx's
// `return 200` does: with keepAlive on the same connection until the
// client says "Connection: close", else once, closing the connection.
func serveReturn200(ln net.Listener, keepAlive bool) {
	answer := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n"
	if !keepAlive {
		answer = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n"
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			br := bufio.NewReader(c)
			for {
				closing := !keepAlive
				for {
					line, err := br.ReadSlice('\n')
					if err != nil {
						return
					}
					if len(line) <= 2 { // the blank line that ends the headers
						break
					}
					if bytes.HasPrefix(line, []byte("Connection:")) {
						closing = true
					}
				}
				if _, err := io.WriteString(c, answer); err != nil || closing {
					return
				}
			}
		}()
	}
}
