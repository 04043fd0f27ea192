package limiterproxy

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"stampede/limit"
)

// TestSendTimeout: an upstream that takes none of a large request body is
// cut off at the send timeout with 504, long before the read timeout, and
// the slot is freed.
func TestSendTimeout(t *testing.T) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c // read nothing
		}
	}()
	const sendTimeout = 300 * time.Millisecond
	p := mustPolicy(t, limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 1}}})
	front := httptest.NewServer(&Handler{Policy: p, Next: NewProxy(mustURL(t, "http://"+ln.Addr().String()),
		ProxyOptions{ReadTimeout: time.Hour, SendTimeout: sendTimeout})})
	defer front.Close()

	body := bytes.Repeat([]byte("x"), 32<<20) // more than the kernel's buffers on both sides hold
	req, _ := http.NewRequest("POST", front.URL+"/upload", bytes.NewReader(body))
	req.Host = "victim.example"
	start := time.Now()
	resp, err := front.Client().Do(req)
	elapsed := time.Since(start)
	select {
	case c := <-accepted:
		held = append(held, c)
	default:
	}
	if err != nil {
		t.Fatalf("POST: %v after %v", err, elapsed)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Errorf("status %d after %v, want 504", resp.StatusCode, elapsed)
	}
	// The read timeout is an hour: anything short of it is the send
	// timeout's doing.
	if elapsed < sendTimeout || elapsed > time.Minute {
		t.Errorf("answered after %v, want at least the send timeout %v and far less than the read timeout", elapsed, sendTimeout)
	}
	if n := p.Conn[0].Limiter.Len(); n != 0 {
		t.Errorf("%d keys still in the zone after the 504", n)
	}
}
