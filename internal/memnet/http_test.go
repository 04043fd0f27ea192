package memnet

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"testing/synctest"
)

// serveHTTP serves h on ln until the test ends, then closes the server and
// waits for it.
func serveHTTP(tb testing.TB, ln net.Listener, h http.HandlerFunc) {
	srv := &http.Server{Handler: h}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	tb.Cleanup(func() {
		srv.Close()
		<-done
	})
}

// TestHTTP serves HTTP/1.1 over a Listener and checks the server sees the
// client's address.
func TestHTTP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := Listen(Options{})
		serveHTTP(t, ln, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.RemoteAddr) })
		from := netip.MustParseAddr("10.1.2.3")
		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return ln.Dial(ctx, from) }}
		client := &http.Client{Transport: tr}
		for i := range 3 {
			resp, err := client.Get("http://site.example/")
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ap, err := netip.ParseAddrPort(string(b))
			if err != nil || ap.Addr() != from {
				t.Errorf("request %d: server saw RemoteAddr %q, want %v:PORT", i, b, from)
			}
		}
		tr.CloseIdleConnections()
	})
}

// BenchmarkRequest measures one HTTP/1.1 request over a keep-alive memnet
// connection.
func BenchmarkRequest(b *testing.B) {
	ln := Listen(Options{})
	benchRequests(b, ln, &http.Transport{DialContext: ln.DialContext}, "http://x/")
}

// BenchmarkRequestTCP is BenchmarkRequest over loopback TCP, for comparison.
func BenchmarkRequestTCP(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	benchRequests(b, ln, &http.Transport{}, "http://"+ln.Addr().String()+"/")
}

// benchRequests measures GETs of url through tr to a server on ln that
// answers 204.
func benchRequests(b *testing.B, ln net.Listener, tr *http.Transport, url string) {
	serveHTTP(b, ln, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("GET", url, nil)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := tr.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
