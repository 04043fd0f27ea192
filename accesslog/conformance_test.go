package accesslog

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"stampede/internal/gunicorntest"
	"stampede/internal/nginxtest"
	"stampede/internal/testproc"
)

// TestNginxWritesWhatWeRead has real nginx log requests with quotes,
// backslashes and bytes outside ASCII under its default escaping and under
// escape=json, and holds what the parser reads from its lines to what was
// sent.
func TestNginxWritesWhatWeRead(t *testing.T) {
	dir := t.TempDir()
	plain := `log_format plain '$host $remote_addr [$time_local] "$request" $status $body_bytes_sent $msec $request_time "$http_user_agent"';`
	json := `log_format js escape=json '{"host":"$host","t":$msec,"req":"$request","st":$status,"rt":$request_time,"ua":"$http_user_agent"}';`
	url := nginxtest.Start(t, func(w io.Writer, listen string) error {
		_, err := fmt.Fprintf(w, nginxtest.Conf(`    %s
    %s
    server {
        listen %s;
        access_log %s plain;
        access_log %s js;
        location / { return 200 "ok\n"; }
    }`), strings.TrimSuffix(plain, ";")+";", strings.TrimSuffix(json, ";")+";", listen, filepath.Join(dir, "plain.log"), filepath.Join(dir, "json.log"))
		return err
	})
	type sent struct{ host, path, ua string }
	reqs := []sent{
		{"site1.example.com", "/app/item/12", `Mozilla/5.0 "quoted" \back\slash`},
		{"Site2.Example.COM", "/caf%C3%A9/x", "caf\u00e9 bot"},
		{"x.example.com", "/api/method/frappe.client.get", "tab\there"},
	}
	for i, r := range reqs {
		req, _ := http.NewRequest("GET", url+r.path+"?q=1", nil)
		req.Host = r.host
		req.Header.Set("User-Agent", r.ua)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for _, lf := range []struct{ file, format string }{{"plain.log", plain}, {"json.log", json}} {
		f := mustNginx(t, lf.format)
		lines := logLines(t, filepath.Join(dir, lf.file), len(reqs))
		for i, line := range lines {
			var e Entry
			if err := f.Parse([]byte(line), &e); err != nil {
				t.Fatalf("%s line %d: %v", lf.file, i+1, err)
			}
			if got, want := string(e.Host), strings.ToLower(reqs[i].host); got != want {
				t.Errorf("%s line %d: Host = %q, want %q", lf.file, i+1, got, want)
			}
			if got, want := string(e.Path), reqs[i].path; got != want {
				t.Errorf("%s line %d: Path = %q, want %q", lf.file, i+1, got, want)
			}
			if e.Status != 200 || e.Precision != time.Millisecond || e.RequestTime < 0 || e.End == 0 {
				t.Errorf("%s line %d: Status, Precision, RequestTime, End = %d, %v, %v, %d", lf.file, i+1, e.Status, e.Precision, e.RequestTime, e.End)
			}
		}
	}
}

// TestGunicornWritesWhatWeRead runs real gunicorn with the worker-time
// format stampede's backend writes and holds what the parser reads from its
// access log to what the app did: %(D)s at least the app's sleep, the Host
// header, the path.
func TestGunicornWritesWhatWeRead(t *testing.T) {
	app := `import time
def app(environ, start_response):
    ms = int(environ.get('QUERY_STRING', 'ms=0').split('=')[1])
    time.sleep(ms / 1000.0)
    start_response('200 OK', [('Content-Type', 'text/plain')])
    return [b'ok\n']
`
	g := gunicorntest.Start(t, gunicorntest.Options{App: app, AccessLogFormat: GunicornWorkerTime})
	addr, logPath := g.Addr, g.AccessLog
	sleeps := []int{0, 60, 120}
	for i, ms := range sleeps {
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://%s/api/method/x%d?ms=%d", addr, i, ms), nil)
		req.Host = fmt.Sprintf("site%d.example.com", i)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	f, err := CompileGunicorn(GunicornWorkerTime)
	if err != nil {
		t.Fatal(err)
	}
	lines := logLines(t, logPath, len(sleeps))
	for i, line := range lines {
		var e Entry
		if err := f.Parse([]byte(line), &e); err != nil {
			t.Fatalf("line %d %q: %v", i+1, line, err)
		}
		if min := time.Duration(sleeps[i]) * time.Millisecond; e.RequestTime < min || e.RequestTime > min+2*time.Second {
			t.Errorf("line %d: worker time %v, want at least the app's %v", i+1, e.RequestTime, min)
		}
		if got, want := string(e.Host), fmt.Sprintf("site%d.example.com", i); got != want {
			t.Errorf("line %d: Host = %q, want %q", i+1, got, want)
		}
		if got, want := string(e.Path), fmt.Sprintf("/api/method/x%d", i); got != want || e.Status != 200 || e.Precision != time.Second {
			t.Errorf("line %d: Path, Status, Precision = %q, %d, %v; want %q, 200, 1s", i+1, got, e.Status, e.Precision, want)
		}
	}
}

// logLines waits up to 5 seconds for the log at path to hold n lines, as a
// server writes them after it answered, and returns them; it fails the test
// when the log holds another number of lines by then.
func logLines(t *testing.T, path string, n int) []string {
	t.Helper()
	var lines []string
	testproc.Wait(5*time.Second, nil, func() bool {
		data, _ := os.ReadFile(path)
		lines = nil
		if text := strings.TrimSpace(string(data)); text != "" {
			lines = strings.Split(text, "\n")
		}
		return len(lines) >= n
	})
	if len(lines) != n {
		t.Fatalf("%s holds %d lines, want %d: %q", path, len(lines), n, lines)
	}
	return lines
}
