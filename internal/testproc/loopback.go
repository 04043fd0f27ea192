package testproc

// This file holds what a test needs of the loopback network: a listener
// on a free port, a port where connections are refused, and whether and
// what a server there answers.

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Listen returns a TCP listener on a free loopback port, for a server the
// test runs in-process; it is closed when the test ends. It fails the test
// when there is no port to listen on.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen on a free loopback port: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// Dials reports whether a TCP connection to addr opens within a second:
// that a program which says nothing when it is ready is listening.
func Dials(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Get fetches url and returns the status and the body. It fails the test
// when the request or the reading of the body fails.
func Get(t testing.TB, url string) (status int, body string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// Refusing returns 127.0.0.1:PORT where connections are refused: a
// socket bound to the port but not listening holds it until the test
// ends, so no other program can listen there meanwhile, as one could on
// the port of a listener that was closed.
func Refusing(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatalf("socket for a refusing port: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("bind a refusing port: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatalf("the refusing port's address: %v", err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}
