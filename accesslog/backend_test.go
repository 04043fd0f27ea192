package accesslog

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"stampede/fakebackend"
	"stampede/workerpool"
)

// TestBackendAccessLog reads the access log `stampede backend
// --access-log` writes with the format it claims, GunicornWorkerTime.
func TestBackendAccessLog(t *testing.T) {
	var buf bytes.Buffer
	alog := fakebackend.NewAccessLog(&buf)
	be, err := fakebackend.New(fakebackend.Options{
		Pool:      workerpool.Config{Workers: 1},
		Routes:    []fakebackend.Route{{Name: "slow", Path: "/slow", Service: workerpool.Constant{D: 30 * time.Millisecond}}},
		AccessLog: alog,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	srv := httptest.NewServer(be)
	defer srv.Close()
	for i := range 3 {
		req, _ := http.NewRequest("GET", srv.URL+"/slow/item/7?x=1", nil)
		req.Host = "site1.example.com"
		req.Header.Set("User-Agent", "test agent")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if err := alog.Flush(); err != nil {
		t.Fatal(err)
	}
	f, err := CompileGunicorn(GunicornWorkerTime)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3: %q", len(lines), buf.String())
	}
	for i, line := range lines {
		var e Entry
		if err := f.Parse([]byte(line), &e); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if e.RequestTime < 30*time.Millisecond || e.RequestTime > 2*time.Second {
			t.Errorf("line %d: worker time %v, want the route's 30ms or a little more", i+1, e.RequestTime)
		}
		if string(e.Host) != "site1.example.com" || string(e.Path) != "/slow/item/7" || e.Status != 200 || e.End == 0 {
			t.Errorf("line %d: Host, Path, Status, End = %q, %q, %d, %d", i+1, e.Host, e.Path, e.Status, e.End)
		}
	}
}
