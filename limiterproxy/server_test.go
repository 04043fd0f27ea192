package limiterproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

type inUser interface{ InUse() int }

// inUseListener is a listener whose InUse is its server's.
type inUseListener struct {
	net.Listener
	srv inUser
}

func (l inUseListener) InUse() int { return l.srv.InUse() }

func TestListenBusyPort(t *testing.T) {
	first, err := Listen("127.0.0.1:0", ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	addr := first.Addr().String()
	_, err = Listen(addr, ServerOptions{})
	if err == nil {
		t.Fatalf("second Listen(%s) succeeded", addr)
	}
	if want := "listen " + addr + ": address already in use"; err.Error() != want {
		t.Errorf("Listen error = %q, want %q", err, want)
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("Listen error %v is not syscall.EADDRINUSE", err)
	}
}

// fakeListener hands out the conns and errors it is given, in order.
type fakeListener struct {
	mu      sync.Mutex
	results []any // net.Conn or error
	closed  bool
}

func (l *fakeListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || len(l.results) == 0 {
		return nil, net.ErrClosed
	}
	r := l.results[0]
	l.results = l.results[1:]
	if err, ok := r.(error); ok {
		return nil, err
	}
	return r.(net.Conn), nil
}

func (l *fakeListener) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	return nil
}

func (l *fakeListener) Addr() net.Addr { return &net.TCPAddr{} }

func TestLimitListener(t *testing.T) {
	c1, c1peer := net.Pipe()
	c2, c2peer := net.Pipe()
	defer c1peer.Close()
	defer c2peer.Close()
	fake := &fakeListener{results: []any{c1, errors.New("accept: too many open files"), c2}}
	l := LimitListener(fake, 2)
	inUse := l.(inUser).InUse

	a, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if got := inUse(); got != 1 {
		t.Errorf("step 1: after one Accept InUse = %d, want 1", got)
	}
	if _, err := l.Accept(); err == nil {
		t.Fatal("step 2: Accept succeeded, want the listener's error")
	}
	if got := inUse(); got != 1 {
		t.Errorf("step 2: after a failed Accept InUse = %d, want 1 (its place given back)", got)
	}
	b, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if got := inUse(); got != 2 {
		t.Errorf("step 3: InUse = %d, want 2", got)
	}
	a.Close()
	a.Close()
	if got := inUse(); got != 1 {
		t.Errorf("step 4: after closing one conn twice InUse = %d, want 1", got)
	}

	// A full listener's Accept waits; Close unblocks it.
	blocker, err := l.Accept() // c2 was taken: the fake now reports closed
	if err == nil {
		blocker.Close()
		t.Fatal("step 5: Accept on an empty fake succeeded")
	}
	if got := inUse(); got != 1 {
		t.Errorf("step 5: InUse = %d, want 1", got)
	}
	full := LimitListener(&fakeListener{results: []any{b}}, 1)
	if _, err := full.Accept(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := full.Accept(); done <- err }()
	full.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Errorf("step 6: Accept blocked on a full listener returned %v after Close, want net.ErrClosed", err)
	}
}

// serveOn serves h on each of proxyServers in turn, on a listener from
// Listen with opts, and runs test against it; the server is shut down
// when test returns.
func serveOn(t *testing.T, opts ServerOptions, h http.Handler, test func(t *testing.T, ln net.Listener)) {
	for _, ps := range proxyServers {
		t.Run(ps.name, func(t *testing.T) {
			ln, err := Listen("127.0.0.1:0", opts)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			srv := ps.new(h, opts)
			go func() { served <- Serve(ctx, srv, ln, time.Second) }()
			defer func() {
				cancel()
				if err := <-served; err != nil {
					t.Errorf("Serve: %v", err)
				}
			}()
			if iu, ok := srv.(inUser); ok {
				// The server counts its connections itself (the epoll
				// server's loops accept on the listener's socket).
				test(t, inUseListener{ln, iu})
				return
			}
			test(t, ln)
		})
	}
}

// TestServerBoundsConnections serves with MaxConns 2 and checks that a
// third connection is served only after one of the first two closes.
func TestServerBoundsConnections(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	serveOn(t, ServerOptions{MaxConns: 2}, ok, testBoundsConnections)
}

func testBoundsConnections(t *testing.T, ln net.Listener) {

	// Two keep-alive connections hold both places.
	var conns []net.Conn
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if code := rawGet(t, c); code != 200 {
			t.Fatalf("conn %d: status %d", i, code)
		}
		conns = append(conns, c)
	}
	if got := ln.(inUser).InUse(); got != 2 {
		t.Fatalf("InUse = %d with two open connections, want 2", got)
	}
	third, err := net.Dial("tcp", ln.Addr().String()) // waits in the accept queue
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if _, err := fmt.Fprint(third, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	conns[0].Close()
	third.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(third), nil)
	if err != nil {
		t.Fatalf("third connection after one closed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("third connection status %d, want 200", resp.StatusCode)
	}
}

func rawGet(t *testing.T, c net.Conn) int {
	t.Helper()
	if _, err := fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestServerHeaderCap sends a header far over the cap: the server answers
// 431 while the client is still sending, and must read what follows
// before it closes, or the reset of a close with unread data can reach
// the client before the answer does.
func TestServerHeaderCap(t *testing.T) {
	serveOn(t, ServerOptions{MaxHeaderBytes: 1 << 10}, http.NotFoundHandler(), func(t *testing.T, ln net.Listener) {
		req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/", nil)
		req.Header.Set("X-Big", strings.Repeat("a", 4<<20))
		if status, _, _ := do(t, http.DefaultClient, req); status != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("4 MiB header: status %d, want 431", status)
		}
	})
}

func TestNewServerDefaults(t *testing.T) {
	srv := NewServer(http.NotFoundHandler(), ServerOptions{})
	if srv.ReadHeaderTimeout != 60*time.Second || srv.IdleTimeout != 75*time.Second || srv.MaxHeaderBytes != 32<<10 {
		t.Errorf("NewServer defaults: ReadHeaderTimeout %v IdleTimeout %v MaxHeaderBytes %d; want 60s 75s 32768",
			srv.ReadHeaderTimeout, srv.IdleTimeout, srv.MaxHeaderBytes)
	}
	if srv.ReadTimeout != 0 || srv.WriteTimeout != 0 {
		t.Errorf("NewServer sets ReadTimeout %v WriteTimeout %v; long requests need none", srv.ReadTimeout, srv.WriteTimeout)
	}
}
