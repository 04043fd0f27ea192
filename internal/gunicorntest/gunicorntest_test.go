package gunicorntest

import (
	"testing"

	"stampede/internal/testproc"
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
	if status, body := testproc.Get(t, "http://"+s.Addr+"/"); status != 200 || body != "gunicorntest\n" {
		t.Errorf("GET /: %d %q, want 200 %q", status, body, "gunicorntest\n")
	}
}
