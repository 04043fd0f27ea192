package gunicorntest

import (
	"io"
	"net/http"
	"testing"
)

// TestStart serves a fixed answer from a WSGI app under gunicorn and checks
// it comes back from the address Start returns, with every worker ready.
func TestStart(t *testing.T) {
	s := Start(t, Options{Workers: 2, App: `def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"gunicorntest\n"]
`})
	if n := s.ReadyCount(); n != 2 {
		t.Errorf("ReadyCount = %d, want 2", n)
	}
	resp, err := http.Get("http://" + s.Addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || string(body) != "gunicorntest\n" {
		t.Errorf("GET /: %d %q, want 200 %q", resp.StatusCode, body, "gunicorntest\n")
	}
}
