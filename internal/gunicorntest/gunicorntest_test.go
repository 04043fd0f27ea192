package gunicorntest

import (
	"os"
	"testing"
	"time"

	"stampede/internal/testproc"
)

// TestStart serves a fixed answer from a WSGI app under gunicorn and checks
// it comes back from the address Start returns, with every worker ready and
// the request in the access log, in its format.
func TestStart(t *testing.T) {
	s := Start(t, Options{Workers: 2, AccessLogFormat: "%(U)s %(s)s", App: `def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"gunicorntest\n"]
`})
	if n := s.ReadyCount(); n != 2 {
		t.Errorf("ReadyCount = %d, want 2", n)
	}
	if status, body := testproc.Get(t, "http://"+s.Addr+"/"); status != 200 || body != "gunicorntest\n" {
		t.Errorf("GET /: %d %q, want 200 %q", status, body, "gunicorntest\n")
	}
	var log []byte
	err := testproc.Wait(5*time.Second, nil, func() bool {
		log, _ = os.ReadFile(s.AccessLog)
		return len(log) > 0
	})
	if err != nil || string(log) != "/ 200\n" {
		t.Errorf("access log %s: %q (%v), want %q", s.AccessLog, log, err, "/ 200\n")
	}
}
