//go:build linux

package limiterproxy

import (
	"context"
	"net/http"
	"testing"
	"time"
)

func init() {
	kaFronts = append(kaFronts, kaFront{name: "epoll", start: startEpollFront, skip: map[string]string{
		// A POST is handed off to the lean server, whose idle upstream
		// connections are not the loop's: it cannot take the one the
		// GET before it left, as a request on another nginx worker
		// cannot. nginx with one worker has one pool.
		"reused-dropped-post": "a POST is handed off and does not reuse the loop's idle connection (as on another nginx worker)",
	}})
	proxyServers = append(proxyServers, struct {
		name string
		new  func(http.Handler, ServerOptions) server
	}{"stampede epoll", newEpollForTest})
}

// newEpollForTest is the epoll server of h on two loops. A *Handler's
// Proxy gets upstream keep-alive, which the epoll server serves in its
// loops (and nginx's statuses do not depend on): its lean path is what
// the suites hold to nginx, its hand-off what they hold to the rest.
func newEpollForTest(h http.Handler, o ServerOptions) server {
	if hh, ok := h.(*Handler); ok {
		if p, ok := hh.Next.(*Proxy); ok && !p.keepAlive {
			hh.Next = withKeepAlive(p, 8)
		}
	}
	o.WatchDelay = ProxyWatchDelay
	s, err := NewEpollServer(h, o, 2)
	if err != nil {
		panic(err)
	}
	return s
}

// withKeepAlive is p with upstream keep-alive n, its other options kept.
func withKeepAlive(p *Proxy, n int) *Proxy {
	t := p.t
	opts := ProxyOptions{ReadTimeout: t.readTimeout, SendTimeout: t.sendTimeout, ConnectTimeout: t.dialer.Timeout,
		NextUpstreamOff: t.noRetry, UpstreamKeepAlive: n}
	if t.dial != nil {
		opts.Dial = t.dial
	}
	return NewProxy(p.upstream, opts)
}

// startEpollFront serves p behind a Handler with no limits on an epoll
// server of one loop (one pool of idle connections, as nginx with one
// worker) until the test ends, and returns its base URL.
func startEpollFront(t testing.TB, p *Proxy) string {
	t.Helper()
	return startEpoll(t, &Handler{Policy: nil, Next: p}, ServerOptions{}, 1)
}

// startEpoll serves h on an epoll server of loops loops until the test
// ends, and returns its base URL.
func startEpoll(t testing.TB, h http.Handler, o ServerOptions, loops int) string {
	t.Helper()
	s, err := NewEpollServer(h, o, loops)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := ListenReusePort("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, s, ln, 5*time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("epoll server: %v", err)
		}
		ln.Close()
	})
	return "http://" + ln.Addr().String()
}
