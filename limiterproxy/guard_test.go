package limiterproxy

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestRefusal: what nginx refuses before any module, as the request a
// handler sees shows it (without the listener's notes on the framing).
func TestRefusal(t *testing.T) {
	tests := []struct {
		method, target, host string
		proto                int // minor version of HTTP/1
		want                 int
	}{
		{"GET", "/", "a", 1, 0},
		{"CONNECT", "a:443", "a:443", 1, 400},
		{"TRACE", "/", "a", 1, 405},
		{"OPTIONS", "*", "a", 1, 400},
		{"PRI", "*", "", 1, 400},
		{"GET", "/", "", 1, 400},
		{"GET", "/", "", 0, 0}, // HTTP/1.0 may leave Host out
	}
	for _, tt := range tests {
		r := httptest.NewRequest(tt.method, "/", nil)
		r.RequestURI, r.Host, r.ProtoMinor = tt.target, tt.host, tt.proto
		if got, why := refusal(r); got != tt.want {
			t.Errorf("%s %s HTTP/1.%d Host %q: refusal %d (%s), want %d", tt.method, tt.target, tt.proto, tt.host, got, why, tt.want)
		}
	}
}

// TestGuardCutOff: a response cut off after its headers were written
// sends them before the connection closes; one cut off before sends
// nothing (the server then closes the connection bare).
func TestGuardCutOff(t *testing.T) {
	for _, wrote := range []bool{true, false} {
		rec := httptest.NewRecorder()
		g := &guard{next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if wrote {
				w.Header().Set("Content-Length", "100")
				w.WriteHeader(http.StatusOK)
			}
			panic(http.ErrAbortHandler)
		})}
		func() {
			defer func() {
				if v := recover(); v != http.ErrAbortHandler {
					t.Errorf("wrote %t: the panic became %v, want http.ErrAbortHandler", wrote, v)
				}
			}()
			g.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		}()
		if rec.Flushed != wrote {
			t.Errorf("wrote headers %t: flushed %t, want %t", wrote, rec.Flushed, wrote)
		}
	}
}

// BenchmarkGuard measures what NewServer's guard adds to a request.
func BenchmarkGuard(b *testing.B) {
	g := &guard{next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }), bodyTimeout: 60e9}
	r := httptest.NewRequest("GET", "http://site1/", nil)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		g.ServeHTTP(w, r)
	}
}
