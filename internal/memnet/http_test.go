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

// TestHTTP serves HTTP/1.1 over a Listener and checks the server sees the
// client's address.
func TestHTTP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := Listen(Options{})
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, r.RemoteAddr)
		})}
		done := make(chan struct{})
		go func() {
			defer close(done)
			srv.Serve(ln)
		}()
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
		srv.Close()
		<-done
	})
}

// BenchmarkRequest measures one HTTP/1.1 request over a keep-alive memnet
// connection.
func BenchmarkRequest(b *testing.B) {
	ln := Listen(Options{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })}
	go srv.Serve(ln)
	defer srv.Close()
	tr := &http.Transport{DialContext: ln.DialContext}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("GET", "http://x/", nil)
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

// BenchmarkRequestTCP is BenchmarkRequest over loopback TCP, for comparison.
func BenchmarkRequestTCP(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })}
	go srv.Serve(ln)
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/", nil)
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
