//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testUpstream answers /big/N with N bytes, /close/... with Connection:
// close, /status/N with status N, anything else with its path and Host;
// always with a Content-Length, as nginx's `return` does.
func testUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, body := http.StatusOK, []byte("got "+r.URL.Path+" host="+r.Host+"\n")
		switch {
		case strings.HasPrefix(r.URL.Path, "/big/"):
			n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/big/"))
			body = bigBody(n)
		case strings.HasPrefix(r.URL.Path, "/close/"):
			w.Header().Set("Connection", "close")
		case strings.HasPrefix(r.URL.Path, "/status/"):
			status, _ = strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/status/"))
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(status)
		w.Write(body) //nolint:errcheck
	}))
	t.Cleanup(up.Close)
	return up
}

// bigBody is n bytes that say where they are.
func bigBody(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26 + i/26%7)
	}
	return b
}

// startEpoll serves the epoll floor in front of up until the test ends.
func startEpoll(t *testing.T, up *httptest.Server, loops, keepAlive int, raw bool) string {
	t.Helper()
	s, err := newEpollServer("127.0.0.1:0", up.Listener.Addr().String(), loops, keepAlive, raw)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve = %v after Close, want nil", err)
		}
	})
	return "127.0.0.1:" + strconv.Itoa(s.port)
}

// testConn is a keep-alive client connection, bounded in time so that a
// lost response fails the test instead of hanging it.
type testConn struct {
	net.Conn
	br *bufio.Reader
}

func dialTest(t *testing.T, addr string) *testConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(time.Minute)) //nolint:errcheck
	return &testConn{Conn: c, br: bufio.NewReader(c)}
}

// want reads one response and checks it.
func (c *testConn) want(status int, body []byte, close bool) error {
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return err
	}
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != status || !bytes.Equal(got, body) || resp.Close != close {
		if len(got) > 80 {
			got = append(got[:80:80], "..."...)
		}
		return fmt.Errorf("got %d %q (%d bytes) close %v, want %d (%d bytes) close %v",
			resp.StatusCode, got, resp.ContentLength, resp.Close, status, len(body), close)
	}
	return nil
}

// expect is a request path and what the floor must answer to it.
func expect(path string) (int, []byte) {
	switch {
	case strings.HasPrefix(path, "/big/"):
		n, _ := strconv.Atoi(strings.TrimPrefix(path, "/big/"))
		return http.StatusOK, bigBody(n)
	case strings.HasPrefix(path, "/status/"):
		n, _ := strconv.Atoi(strings.TrimPrefix(path, "/status/"))
		return n, []byte("got " + path + " host=h\n")
	}
	return http.StatusOK, []byte("got " + path + " host=h\n")
}

// TestEpollKeepAlive sends keep-alive requests over several connections at
// once, as wrk does, among them bodies larger than a socket's buffers
// (partial writes, EAGAIN), answers after which the upstream closes, and
// statuses other than 200; every response must be the upstream's. It
// runs with the loops' system calls through Syscall and through RawSyscall;
// with RawSyscall, where the loops hold their Ps, the upstream and the
// clients here run when sysmon makes a loop yield (every 10ms): seconds
// with fewer Ps than loops, not a hang.
func TestEpollKeepAlive(t *testing.T) {
	for _, raw := range []bool{false, true} {
		t.Run(fmt.Sprintf("raw=%v", raw), func(t *testing.T) { testEpollKeepAlive(t, raw) })
	}
}

func testEpollKeepAlive(t *testing.T, raw bool) {
	up := testUpstream(t)
	addr := startEpoll(t, up, 2, 2, raw)
	const conns, requests = 6, 60
	var wg sync.WaitGroup
	for i := range conns {
		c := dialTest(t, addr)
		wg.Go(func() {
			for j := range requests {
				path := fmt.Sprintf("/c%d/r%d", i, j)
				switch j % 10 {
				case 3:
					path = "/big/" + strconv.Itoa(300_000+j)
				case 5:
					path = fmt.Sprintf("/close/c%d/r%d", i, j)
				case 7:
					path = "/status/404"
				}
				if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
					t.Errorf("connection %d, request %d (%s): %v", i, j, path, err)
					return
				}
				status, body := expect(path)
				if err := c.want(status, body, false); err != nil {
					t.Errorf("connection %d, request %d (%s): %v", i, j, path, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestEpollPipelinedAndClose sends two requests in one write (the answers
// come in order), then one with Connection: close (the floor closes after
// it), and after the upstream dropped the idle connections one more on a
// new client connection.
func TestEpollPipelinedAndClose(t *testing.T) {
	up := testUpstream(t)
	addr := startEpoll(t, up, 1, 4, true)
	c := dialTest(t, addr)
	steps := []struct {
		send  string
		paths []string
		close bool
	}{
		{"GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /big/200000 HTTP/1.1\r\nHost: h\r\n\r\n", []string{"/a", "/big/200000"}, false},
		{"GET /b HTTP/1.1\r\nHost: h\r\n\r\n", []string{"/b"}, false},
		{"GET /c HTTP/1.1\r\nhost: h\r\nConnection: close\r\n\r\n", []string{"/c"}, true},
	}
	for i, s := range steps {
		if _, err := io.WriteString(c, s.send); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		for _, p := range s.paths {
			status, body := expect(p)
			if err := c.want(status, body, s.close); err != nil {
				t.Fatalf("step %d, %s: %v", i, p, err)
			}
		}
	}
	if n, err := c.br.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after Connection: close: read %d, %v, want EOF", n, err)
	}

	up.CloseClientConnections()
	c = dialTest(t, addr)
	for i, p := range []string{"/after-close", "/again"} {
		if _, err := io.WriteString(c, "GET "+p+" HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		status, body := expect(p)
		if err := c.want(status, body, false); err != nil {
			t.Fatalf("request %d after the upstream closed its connections, %s: %v", i, p, err)
		}
	}
}

// TestParseHeads holds the floor's two parsers to what they must take and
// refuse.
func TestParseHeads(t *testing.T) {
	reqs := []struct {
		head, uri, host string
		keep, ok        bool
	}{
		{"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n", "/", "127.0.0.1:8080", true, true},
		{"GET /x?y HTTP/1.0\r\nHOST:  h \r\n\r\n", "/x?y", "h", false, true},
		{"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", "/", "", true, true},
		{"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", "/", "", false, true},
		{"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\n", "", "", false, false},
		{"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", "", "", false, false},
		{"GET / HTTP/2\r\n\r\n", "", "", false, false},
		{"GET /\r\n\r\n", "", "", false, false},
		{"GET / HTTP/1.1\r\nno colon\r\n\r\n", "", "", false, false},
	}
	for i, r := range reqs {
		uri, host, keep, ok := parseRequest([]byte(r.head))
		if string(uri) != r.uri || string(host) != r.host || keep != r.keep || ok != r.ok {
			t.Errorf("request %d: parseRequest(%q) = %q, %q, %v, %v, want %q, %q, %v, %v",
				i, r.head, uri, host, keep, ok, r.uri, r.host, r.keep, r.ok)
		}
	}
	resps := []struct {
		head           string
		status, length int
		keep, ok       bool
	}{
		{"HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\n", 200, 3, true, true},
		{"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\n", 200, 3, false, true},
		{"HTTP/1.1 404 Not Found\r\n\r\n", 404, -1, false, true},
		{"HTTP/1.1 304 Not Modified\r\n\r\n", 304, 0, true, true},
		{"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", 200, 0, false, true},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", 0, 0, false, false},
		{"HTTP/1.1 100 Continue\r\n\r\n", 0, 0, false, false},
		{"HTTP/1.1 200 OK\r\nContent-Length: 3x\r\n\r\n", 0, 0, false, false},
		{"HTTP/1.1 2000 OK\r\n\r\n", 0, 0, false, false},
	}
	for i, r := range resps {
		status, length, keep, ok := parseResponse([]byte(r.head))
		if status != r.status || length != r.length || keep != r.keep || ok != r.ok {
			t.Errorf("response %d: parseResponse(%q) = %d, %d, %v, %v, want %d, %d, %v, %v",
				i, r.head, status, length, keep, ok, r.status, r.length, r.keep, r.ok)
		}
	}
}
