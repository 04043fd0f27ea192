// The server's tests stay in one file past 600 lines: they share one
// in-memory harness (startServer, exchange, assertClosed) and a split along
// features only repeated its imports and helpers.

package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"stampede/internal/memnet"
)

// serve starts a Server for h on an in-memory listener and returns a dial
// to it; the server is closed when the test ends.
func startServer(t *testing.T, srv *Server) func() net.Conn {
	t.Helper()
	ln := memnet.Listen(memnet.Options{})
	if srv.ErrorLog == nil {
		srv.ErrorLog = log.New(io.Discard, "", 0)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v, want http.ErrServerClosed", err)
		}
	})
	return func() net.Conn {
		c, err := ln.Dial(context.Background(), netip.MustParseAddr("192.0.2.1"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
}

// echo answers every request 200 with its method, path and Host.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, r.Host)
})

// exchange writes raw to c and reads n responses to reqs' methods.
func exchange(t *testing.T, c net.Conn, raw string, methods ...string) []*http.Response {
	t.Helper()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var out []*http.Response
	for i, m := range methods {
		resp, err := http.ReadResponse(br, &http.Request{Method: m})
		if err != nil {
			t.Fatalf("response %d: %v", i+1, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("response %d: body: %v", i+1, err)
		}
		resp.Body = io.NopCloser(strings.NewReader(string(b)))
		out = append(out, resp)
	}
	return out
}

func bodyOf(r *http.Response) string {
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

// assertClosed checks that the server closes c with nothing more to read.
func assertClosed(t *testing.T, c net.Conn, step string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Read(make([]byte, 1))
	if n != 0 || err != io.EOF {
		t.Errorf("%s: read after the response = %d, %v; want 0, EOF (closed)", step, n, err)
	}
}

func TestServerKeepAliveAndPipelining(t *testing.T) {
	dial := startServer(t, &Server{Handler: echo})
	c := dial()
	// Three requests in one write: answered in order on one connection.
	raw := "GET /a HTTP/1.1\r\nHost: x\r\n\r\n" +
		"HEAD /b HTTP/1.1\r\nHost: y\r\n\r\n" +
		"GET /c HTTP/1.1\r\nHost: z\r\n\r\n"
	rs := exchange(t, c, raw, "GET", "HEAD", "GET")
	for i, want := range []struct {
		body string
		cl   int64
	}{{"GET /a x", 8}, {"", 9}, {"GET /c z", 8}} {
		r := rs[i]
		if got := bodyOf(r); r.StatusCode != 200 || got != want.body || r.ContentLength != want.cl || r.Close {
			t.Errorf("step %d: %d %q length %d close %v, want 200 %q length %d keep-alive", i+1, r.StatusCode, got, r.ContentLength, r.Close, want.body, want.cl)
		}
		if r.Header.Get("Date") == "" || r.Header.Get("Content-Type") != "text/plain" {
			t.Errorf("step %d: header %v, want Date and Content-Type", i+1, r.Header)
		}
	}
	// And again on the same connection, later.
	rs = exchange(t, c, "GET /d HTTP/1.1\r\nHost: w\r\n\r\n", "GET")
	if got := bodyOf(rs[0]); got != "GET /d w" {
		t.Errorf("step 4: %q, want %q", got, "GET /d w")
	}
}

func TestServerClose(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		noKeep    bool
		wantClose bool
		wantConn  string // the Connection header, but for close
	}{
		{"client close", "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", false, true, ""},
		{"HTTP/1.0", "GET / HTTP/1.0\r\n\r\n", false, true, ""},
		{"HTTP/1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", false, false, "keep-alive"},
		{"keep-alives disabled", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", true, true, ""},
		{"handler close", "GET /close HTTP/1.1\r\nHost: x\r\n\r\n", false, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := Server{DisableKeepAlives: tc.noKeep}
			srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/close" {
					w.Header().Set("Connection", "close")
				}
				io.WriteString(w, "ok")
			})
			c := startServer(t, &srv)()
			r := exchange(t, c, tc.raw, "GET")[0]
			// ReadResponse takes "Connection: close" out into Close.
			if got := r.Header.Get("Connection"); r.StatusCode != 200 || r.Close != tc.wantClose || got != tc.wantConn || bodyOf(r) != "ok" {
				t.Errorf("status %d close %v Connection %q, want 200 %v %q", r.StatusCode, r.Close, got, tc.wantClose, tc.wantConn)
			}
			if tc.wantClose {
				assertClosed(t, c, tc.name)
			}
		})
	}
}

func TestServerRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      int
	}{
		{"garbage", "GARBAGE\r\n\r\n", 400},
		{"no Host on HTTP/1.1", "GET / HTTP/1.1\r\n\r\n", 400},
		{"two Hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
		{"bad Host", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
		{"bad header name", "GET / HTTP/1.1\r\nHost: a\r\nX(y): 1\r\n\r\n", 400},
		{"bad content length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n", 400},
		{"two content lengths", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
		{"HTTP/2", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505},
		{"unknown expectation", "GET / HTTP/1.1\r\nHost: a\r\nExpect: magic\r\n\r\n", 417},
		{"unknown transfer coding", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
		{"headers too large", "GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("y", 16<<10) + "\r\n\r\n", 431},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var served atomic.Int32
			c := startServer(t, &Server{MaxHeaderBytes: 1 << 10, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				served.Add(1)
			})})()
			r := exchange(t, c, tc.raw, "GET")[0]
			if r.StatusCode != tc.want || !r.Close {
				t.Errorf("status %d close %v, want %d and close", r.StatusCode, r.Close, tc.want)
			}
			assertClosed(t, c, tc.name)
			if n := served.Load(); n != 0 {
				t.Errorf("handler ran %d times, want 0", n)
			}
		})
	}
}

// TestServerRefuseLingers sends a head over MaxHeaderBytes on loopback TCP
// and goes on sending for a second, twice net/http's 500 ms of reading
// what follows and far within nginx's lingering_timeout between two
// writes, before it reads: every write must succeed, and the whole 431
// come, then the end of the connection, as at nginx (see limiterproxy's
// TestConformanceHeaderTooLarge).
func TestServerRefuseLingers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	srv := &Server{MaxHeaderBytes: 1 << 10, ErrorLog: log.New(io.Discard, "", 0), Handler: http.NotFoundHandler()}
	go srv.Serve(ln)
	defer srv.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\nX: "+strings.Repeat("y", 16<<10)+"\r\n"); err != nil {
		t.Fatal(err)
	}
	const writes, gap = 20, 50 * time.Millisecond
	for i := range writes {
		time.Sleep(gap) // the client's pace, not a wait for the server
		if _, err := fmt.Fprintf(c, "X-%d: %s\r\n", i, strings.Repeat("z", 1<<10)); err != nil {
			t.Fatalf("write %d after the head went over: %v", i, err)
		}
	}
	io.WriteString(c, "\r\n")
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("%v after %q", err, got)
	}
	r, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(got))), nil)
	if err != nil {
		t.Fatalf("%v in %q", err, got)
	}
	if b, err := io.ReadAll(r.Body); err != nil || r.StatusCode != http.StatusRequestHeaderFieldsTooLarge || !r.Close {
		t.Errorf("%d close %v, body %q %v; want 431, close and the whole body", r.StatusCode, r.Close, b, err)
	}
}

func TestServerBodies(t *testing.T) {
	big := strings.Repeat("0123456789", 1000) // past bufferBeforeCommit: chunked
	srv := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			io.WriteString(w, big)
		case "/echo":
			b, err := io.ReadAll(r.Body)
			if err != nil {
				t.Errorf("/echo: reading the body: %v", err)
			}
			w.Write(b)
		case "/ignore": // leaves the body unread: drained for keep-alive
			io.WriteString(w, "ignored")
		case "/nocontent":
			w.WriteHeader(http.StatusNoContent)
		case "/short": // declares more than it writes: the connection closes
			w.Header().Set("Content-Length", "10")
			io.WriteString(w, "short")
		}
	})}
	dial := startServer(t, srv)
	c := dial()
	raw := "GET /big HTTP/1.1\r\nHost: a\r\n\r\n" +
		"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello" +
		"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n" +
		"POST /ignore HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nxyz" +
		"GET /nocontent HTTP/1.1\r\nHost: a\r\n\r\n" +
		"GET /short HTTP/1.1\r\nHost: a\r\n\r\n"
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for i, want := range []struct {
		status  int
		body    string
		chunked bool
	}{{200, big, true}, {200, "hello", false}, {200, "abcde", false}, {200, "ignored", false}, {204, "", false}} {
		r, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Fatalf("step %d: body: %v", i+1, err)
		}
		chunked := len(r.TransferEncoding) > 0
		if r.StatusCode != want.status || string(b) != want.body || chunked != want.chunked {
			t.Errorf("step %d: %d, %d bytes, chunked %v; want %d, %d bytes, chunked %v", i+1, r.StatusCode, len(b), chunked, want.status, len(want.body), want.chunked)
		}
	}
	// The short body: its header says 10 and 5 come; then the close.
	r, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("step 6: %v", err)
	}
	if b, err := io.ReadAll(r.Body); string(b) != "short" || err != io.ErrUnexpectedEOF {
		t.Errorf("step 6: body %q, %v; want \"short\" cut off", b, err)
	}
}

// TestServerAnswersBeforeUnreadBody checks that a handler that leaves
// the body unread is answered before the client has sent the body, as
// nginx sends an error page and then discards the body: the body is read
// and dropped after the answer and the connection carries the next
// request; a body that does not come for lingerTimeout closes it.
func TestServerAnswersBeforeUnreadBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dial := startServer(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/ignore" {
				http.Error(w, "no", http.StatusServiceUnavailable)
				return
			}
			io.WriteString(w, "ok")
		})})
		c := dial()
		br := bufio.NewReader(c)
		answer := func(step string) *http.Response {
			t.Helper()
			type read struct {
				r   *http.Response
				err error
			}
			got := make(chan read, 1)
			go func() {
				r, err := http.ReadResponse(br, nil)
				if err == nil {
					_, err = io.Copy(io.Discard, r.Body)
				}
				got <- read{r, err}
			}()
			synctest.Wait()
			select {
			case g := <-got:
				if g.err != nil {
					t.Fatalf("%s: %v", step, g.err)
				}
				return g.r
			default:
				t.Fatalf("%s: no answer while the client waits", step)
				return nil
			}
		}
		io.WriteString(c, "POST /ignore HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nab")
		if r := answer("step 1"); r == nil || r.StatusCode != http.StatusServiceUnavailable || r.Close {
			t.Fatalf("step 1: %v, want 503 and keep-alive before the rest of the body", r)
		}
		io.WriteString(c, "cdeGET /next HTTP/1.1\r\nHost: a\r\n\r\n")
		if r := answer("step 2"); r == nil || r.StatusCode != http.StatusOK {
			t.Fatalf("step 2: %v, want 200 on the same connection once the body came", r)
		}
		io.WriteString(c, "POST /ignore HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n")
		if r := answer("step 3"); r == nil || r.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("step 3: %v, want 503 before the body", r)
		}
		start := time.Now()
		c.SetReadDeadline(start.Add(2 * lingerTimeout))
		if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Errorf("step 4: a body that never comes: read = %d, %v; want 0, EOF (closed)", n, err)
		}
		if waited := time.Since(start); waited != lingerTimeout {
			t.Errorf("step 4: closed after %v, want lingerTimeout (%v)", waited, lingerTimeout)
		}
	})
}

func TestServerContinue(t *testing.T) {
	c := startServer(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/refuse" {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	})})()
	br := bufio.NewReader(c)
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("step 1: %q, %v; want 100 Continue first", line, err)
	}
	br.ReadString('\n') // the blank line
	io.WriteString(c, "hi")
	r, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := bodyOf(r); r.StatusCode != 200 || got != "hi" {
		t.Errorf("step 2: %d %q, want 200 %q", r.StatusCode, got, "hi")
	}
	// A handler that does not read: no 100, and the connection closes, for
	// the client may still send the body.
	io.WriteString(c, "POST /refuse HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
	r, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.StatusCode != http.StatusForbidden || !r.Close {
		t.Errorf("step 3: %d close %v, want 403 and close", r.StatusCode, r.Close)
	}
}

func TestServerPanic(t *testing.T) {
	c := startServer(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "partial")
		panic(http.ErrAbortHandler)
	})})()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	assertClosed(t, c, "abort")
}

// TestServerClientGone checks that a handler waiting on its context
// learns that the client left, and that a pipelined request behind one
// that waited is neither taken for a departure nor lost.
func TestServerClientGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cancelled := make(chan error, 1)
		kept := make(chan context.Context, 1)
		release := make(chan struct{})
		srv := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/wait":
				select {
				case <-r.Context().Done():
					cancelled <- r.Context().Err()
					return
				case <-time.After(time.Minute):
				}
			case "/keep":
				kept <- r.Context()
			case "/hold":
				<-release
			case "/derived":
				ctx, cancel := context.WithTimeout(r.Context(), time.Hour)
				defer cancel()
				<-ctx.Done()
				cancelled <- ctx.Err()
				return
			}
			io.WriteString(w, r.URL.Path)
		})}
		dial := startServer(t, srv)

		c := dial()
		io.WriteString(c, "GET /wait HTTP/1.1\r\nHost: a\r\n\r\n")
		synctest.Wait()
		c.Close()
		synctest.Wait()
		select {
		case err := <-cancelled:
			if err != context.Canceled {
				t.Errorf("step 1: context error %v, want context.Canceled", err)
			}
		default:
			t.Errorf("step 1: the handler did not see the client leave")
		}

		c = dial()
		io.WriteString(c, "GET /derived HTTP/1.1\r\nHost: a\r\n\r\n")
		synctest.Wait()
		c.Close()
		synctest.Wait()
		if len(cancelled) != 1 || <-cancelled != context.Canceled {
			t.Errorf("step 2: a context derived from the request's did not end with the client")
		}

		c = dial()
		rs := exchange(t, c, "GET /wait HTTP/1.1\r\nHost: a\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\n\r\n", "GET", "GET")
		if a, b := bodyOf(rs[0]), bodyOf(rs[1]); a != "/wait" || b != "/next" || len(cancelled) != 0 {
			t.Errorf("step 3: %q then %q, %d cancelled; want /wait then /next, none", a, b, len(cancelled))
		}

		// A request's context asked for only after its handler returned,
		// while the next request runs: already done, and no watch of the
		// connection under the next request.
		exchange(t, c, "GET /keep HTTP/1.1\r\nHost: a\r\n\r\n", "GET")
		io.WriteString(c, "GET /hold HTTP/1.1\r\nHost: a\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\n\r\n")
		synctest.Wait()
		old := <-kept
		select {
		case <-old.Done():
		default:
			t.Errorf("step 4: a finished request's context is not done")
		}
		close(release)
		rs = exchange(t, c, "", "GET", "GET")
		if a, b := bodyOf(rs[0]), bodyOf(rs[1]); a != "/hold" || b != "/next" {
			t.Errorf("step 4: %q then %q, want /hold then /next", a, b)
		}
	})
}

// TestServerAfterFunc checks that a function scheduled with the AfterFunc
// method of a request's context (which the proxy's upstream transport
// calls directly) runs when the client leaves,
// once the request ends, or not at all once stopped, without the context
// behind the request's being made for it.
func TestServerAfterFunc(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ran := make(chan string, 4)
		stopped := make(chan bool, 1)
		release := make(chan struct{})
		srv := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			path := r.URL.Path
			after := r.Context().(interface{ AfterFunc(func()) func() bool })
			stop := after.AfterFunc(func() { ran <- path })
			if rc := r.Context().(*reqContext); rc.ready.Load() {
				t.Errorf("%s: AfterFunc made the request's cancellable context", path)
			}
			switch path {
			case "/gone":
				<-release
			case "/stop":
				stopped <- stop()
			}
		})}
		dial := startServer(t, srv)

		c := dial()
		io.WriteString(c, "GET /gone HTTP/1.1\r\nHost: a\r\n\r\n")
		synctest.Wait()
		c.Close()
		synctest.Wait()
		if len(ran) != 1 || <-ran != "/gone" {
			t.Errorf("step 1: the client left and the function did not run")
		}
		close(release)

		c = dial()
		exchange(t, c, "GET /end HTTP/1.1\r\nHost: a\r\n\r\n", "GET")
		synctest.Wait()
		if len(ran) != 1 || <-ran != "/end" {
			t.Errorf("step 2: the request ended and the function did not run")
		}

		exchange(t, c, "GET /stop HTTP/1.1\r\nHost: a\r\n\r\n", "GET")
		synctest.Wait()
		if !<-stopped || len(ran) != 0 {
			t.Errorf("step 3: stop did not keep the function from running (%d ran)", len(ran))
		}
	})
}

// TestServerHeaderPerRequest checks that a response's header starts empty
// on every request of a connection, which reuses one map for them.
func TestServerHeaderPerRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n := len(w.Header()); n != 0 {
				t.Errorf("%s: the header starts with %d fields, want none", r.URL.Path, n)
			}
			if r.URL.Path == "/set" {
				w.Header().Set("X-Set", "1")
			}
		})}
		c := startServer(t, srv)()
		rs := exchange(t, c, "GET /set HTTP/1.1\r\nHost: a\r\n\r\nGET /plain HTTP/1.1\r\nHost: a\r\n\r\n", "GET", "GET")
		if got := rs[0].Header.Get("X-Set"); got != "1" {
			t.Errorf("/set: X-Set %q, want 1", got)
		}
		if got, ok := rs[1].Header["X-Set"]; ok {
			t.Errorf("/plain: X-Set %q, the last request's, want none", got)
		}
	})
}

// TestServerNoWatch checks that a handler that does not ask for its
// context's end costs no goroutine beyond the connection's.
func TestServerNoWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var during int
		dial := startServer(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-release
		})})
		synctest.Wait()
		before := runtime.NumGoroutine()
		c := dial()
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
		synctest.Wait()
		during = runtime.NumGoroutine()
		close(release)
		exchange(t, c, "", "GET")
		if during != before+1 {
			t.Errorf("goroutines %d while the handler runs, want %d (the connection's alone)", during, before+1)
		}
	})
}

func TestServerShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		srv := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				<-release
			}
			io.WriteString(w, "done")
		})}
		ln := memnet.Listen(memnet.Options{})
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		dial := func() net.Conn {
			c, err := ln.Dial(context.Background(), netip.Addr{})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		idle, busy := dial(), dial()
		exchange(t, idle, "GET / HTTP/1.1\r\nHost: a\r\n\r\n", "GET")
		io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
		synctest.Wait()
		shut := make(chan error, 1)
		go func() { shut <- srv.Shutdown(context.Background()) }()
		synctest.Wait()
		assertClosed(t, idle, "idle connection")
		if len(shut) != 0 {
			t.Fatalf("Shutdown returned with a request in flight")
		}
		close(release)
		r := exchange(t, busy, "", "GET")[0]
		if got := bodyOf(r); got != "done" || !r.Close {
			t.Errorf("request in flight: %q close %v, want \"done\" and close", got, r.Close)
		}
		if err := <-shut; err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v, want http.ErrServerClosed", err)
		}
	})
}

// FuzzServer feeds arbitrary bytes to a connection: the server must not
// panic, and whatever it answers must parse as HTTP/1.1 responses.
func FuzzServer(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
		"HEAD / HTTP/1.0\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx",
		"\x00\x01\r\n\r\n",
	} {
		f.Add(s)
	}
	// Loopback TCP, for its half-close: the server sees the input end.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Skip(err)
	}
	srv := &Server{MaxHeaderBytes: 1 << 10, ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodHead {
			// ReadResponse below cannot know the method: no length to
			// mislead it.
			w.Header().Set("Content-Length", "0")
			return
		}
		fmt.Fprintf(w, "%s %s", r.Method, r.URL.Path)
	})}
	go srv.Serve(ln)
	f.Cleanup(func() { srv.Close() })
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		go func() {
			io.WriteString(c, raw)
			c.(*net.TCPConn).CloseWrite()
		}()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		for {
			if _, err := br.Peek(1); err != nil {
				if isTimeout(err) {
					t.Fatalf("no end to the answers")
				}
				return
			}
			r, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("an answer that does not parse: %v", err)
			}
			if _, err := io.Copy(io.Discard, r.Body); err != nil {
				t.Fatalf("an answer's body: %v", err)
			}
		}
	})
}

// TestServerHijack checks that a handler can take a connection over, as
// httputil.ReverseProxy does for a protocol switch: while its context is
// watched, the bytes the client sent beyond the request (the first of
// which the watch may have read) reach the handler, its context is not
// ended by the hand-over, and Shutdown neither waits for nor closes the
// connection.
func TestServerHijack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hijacked := make(chan error, 1)
		srv := &Server{}
		srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			done := r.Context().Done() // the connection is watched from here
			time.Sleep(time.Second)    // the client's bytes come in meanwhile
			conn, rw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				hijacked <- err
				return
			}
			defer conn.Close()
			if _, _, err := http.NewResponseController(w).Hijack(); !errors.Is(err, http.ErrHijacked) {
				hijacked <- fmt.Errorf("second Hijack: %v, want http.ErrHijacked", err)
				return
			}
			if _, err := w.Write([]byte("x")); !errors.Is(err, http.ErrHijacked) {
				hijacked <- fmt.Errorf("Write after Hijack: %v, want http.ErrHijacked", err)
				return
			}
			rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
			rw.Flush()
			hijacked <- nil
			line, err := rw.ReadString('\n')
			select {
			case <-done:
				line = "context ended: " + line
			default:
			}
			rw.WriteString(line)
			rw.Flush()
		})
		c := startServer(t, srv)()
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\nhello\n")
		synctest.Wait()
		if err := <-hijacked; err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown with a hijacked connection: %v", err)
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
		if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("response %v, %v; want 101", resp, err)
		}
		if line, err := br.ReadString('\n'); line != "hello\n" {
			t.Errorf("echoed %q, %v; want %q", line, err, "hello\n")
		}
	})
}

// TestServerH2Preface checks that "PRI * HTTP/2.0", which net/http's
// server hands to the handler, reaches it too, and that the connection
// closes after the answer.
func TestServerH2Preface(t *testing.T) {
	c := startServer(t, &Server{Handler: echo})()
	rs := exchange(t, c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "PRI")
	if got := bodyOf(rs[0]); rs[0].StatusCode != 200 || got != "PRI * " || !rs[0].Close {
		t.Errorf("PRI *: %d %q close %v, want 200 %q and close", rs[0].StatusCode, got, rs[0].Close, "PRI * ")
	}
	assertClosed(t, c, "after PRI *")
}

// TestServerWatchDelay checks that with WatchDelay a request whose
// context is waited on is watched only once it has run that long: a
// handler done sooner costs no goroutine, and one still waiting learns of
// its client's end when the delay is over.
func TestServerWatchDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const delay = 50 * time.Millisecond
		gone := make(chan time.Duration, 1)
		goroutines := make(chan int, 1)
		srv := &Server{WatchDelay: delay, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			done := r.Context().Done()
			if r.URL.Path == "/quick" {
				goroutines <- runtime.NumGoroutine()
				return
			}
			<-done
			gone <- time.Since(start)
		})}
		dial := startServer(t, srv)
		synctest.Wait()
		before := runtime.NumGoroutine()
		c := dial()
		exchange(t, c, "GET /quick HTTP/1.1\r\nHost: a\r\n\r\n", "GET")
		time.Sleep(2 * delay)
		synctest.Wait()
		if n := <-goroutines; n != before+1 {
			t.Errorf("a quick request: %d goroutines while it ran, want %d (the connection's alone)", n, before+1)
		}
		if n := runtime.NumGoroutine(); n != before+1 {
			t.Errorf("after a quick request and the delay: %d goroutines, want %d", n, before+1)
		}

		io.WriteString(c, "GET /wait HTTP/1.1\r\nHost: a\r\n\r\n")
		synctest.Wait()
		c.Close()
		if d := <-gone; d != delay {
			t.Errorf("the client's end seen after %v, want %v (the delay)", d, delay)
		}
	})
}

// TestServerReverseProxyCutBody checks that a body httputil.ReverseProxy
// copies from an upstream that breaks off midway reaches the client as
// broken, not as a complete answer: the server marks its requests with
// http.ServerContextKey, so that the proxy aborts as it does on net/http.
func TestServerReverseProxyCutBody(t *testing.T) {
	up := memnet.Listen(memnet.Options{})
	defer up.Close()
	go func() {
		c, err := up.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
	}()
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.Out.URL.Scheme, r.Out.URL.Host = "http", "up" },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return up.Dial(ctx, netip.MustParseAddr("192.0.2.2"))
		}},
		ErrorLog: log.New(io.Discard, "", 0),
	}
	c := startServer(t, &Server{Handler: rp})()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatalf("body %q read to a clean end; want the cut seen as an error", body)
	}
}

// TestServerNoIdleTimeout keeps a connection busy, one request at a time,
// for longer than the header timeout: without an idle timeout nothing
// bounds the waits between requests, as in net/http, so the header
// timeout of the first request must not close the connection later.
func TestServerNoIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dial := startServer(t, &Server{Handler: echo, ReadHeaderTimeout: time.Second})
		c := dial()
		for i := range 5 {
			rs := exchange(t, c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n", "GET")
			if got := bodyOf(rs[0]); got != "GET /a x" {
				t.Fatalf("request %d: %q, want %q", i+1, got, "GET /a x")
			}
			time.Sleep(600 * time.Millisecond)
		}
	})
}
