package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"stampede/internal/nginxtest"
	"stampede/limiterproxy"
	"stampede/scenarios"
)

// stockNginx is an nginx.conf as an operator has one, with the two parts of
// --snippet pasted where they go.
var stockNginx = nginxtest.Conf(`    add_header Strict-Transport-Security "max-age=31536000" always;

HTTP_PART

    server {
        listen 127.0.0.1:8080;
        server_name erp.example.com;

SERVER_PART

ROOT_LOCATION
    }`)

// TestNginxConfigPassesNginxT checks every scenario's export, whole and as
// a snippet pasted into stockNginx, with and without the headers, with
// `nginx -t`.
func TestNginxConfigPassesNginxT(t *testing.T) {
	nginx := nginxtest.Require(t)
	files, err := filepath.Glob("../../scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios found: %v", err)
	}
	// A scenario with locations, so that their blocks are checked too.
	files = append(files, "testdata/locations.yaml")
	for _, f := range files {
		sc, err := scenarios.LoadWith(f, nil)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, headers := range []bool{true, false} {
			// With headers, upstream keep-alive too: its upstream block
			// goes in the http {} part.
			keepAlive := 0
			if headers {
				keepAlive = 32
			}
			opts := limiterproxy.NginxOptions{ReadTimeout: sc.Proxy.ReadTimeout, NoHeaders: !headers, UpstreamKeepAlive: keepAlive}
			var whole, snip bytes.Buffer
			if err := limiterproxy.WriteNginx(&whole, sc.Proxy.Limits, opts); err != nil {
				t.Fatalf("%s: WriteNginx: %v", f, err)
			}
			if err := limiterproxy.WriteNginxSnippet(&snip, sc.Proxy.Limits, opts); err != nil {
				t.Fatalf("%s: WriteNginxSnippet: %v", f, err)
			}
			httpPart, serverPart := snippetParts(t, snip.String())
			root := "        location / { proxy_pass http://127.0.0.1:9000; }"
			if strings.Contains(serverPart, "location / {") {
				root = ""
			}
			stock := strings.NewReplacer("HTTP_PART", httpPart, "SERVER_PART", serverPart, "ROOT_LOCATION", root).Replace(stockNginx)
			for form, conf := range map[string]string{"whole": whole.String(), "snippet": stock} {
				dir := t.TempDir()
				path := filepath.Join(dir, "nginx.conf")
				if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
					t.Fatal(err)
				}
				out, err := exec.Command(nginx, "-t", "-q", "-p", dir, "-c", path, "-e", "stderr").CombinedOutput()
				if err != nil {
					t.Errorf("%s, %s form, headers %t: nginx -t: %v\n%s\nconfiguration:\n%s", f, form, headers, err, out, conf)
				}
			}
			if !headers && strings.Contains(snip.String(), "add_header X-Stampede") {
				t.Errorf("%s: --headers=false still writes an X-Stampede header", f)
			}
		}
	}
}

// snippetParts cuts WriteNginxSnippet's output at its labels.
func snippetParts(t *testing.T, s string) (httpPart, serverPart string) {
	t.Helper()
	cut := func(from, to string) string {
		i, j := strings.Index(s, from), strings.Index(s, to)
		if i < 0 || j < i {
			t.Fatalf("snippet has no %q ... %q part:\n%s", from, to, s)
		}
		return s[i+len(from) : j]
	}
	return cut("# ---- http {} part: paste inside http { ... } ----", "# ---- end of the http {} part ----"),
		cut("# ---- server {} part: paste inside the server { ... } that serves the app ----", "# ---- end of the server {} part ----")
}

func TestNginxConfigCommand(t *testing.T) {
	path := writeScenario(t, string(readFile(t, filepath.Join("..", "..", "scenarios", "stock-balance.yaml"))))
	runWant(t, []string{"nginx-config", path, "--listen", "127.0.0.1:8181", "--upstream", "127.0.0.1:9191", "--time-scale", "0.01"},
		"limit_conn_zone $host", "listen 127.0.0.1:8181;", "proxy_pass http://127.0.0.1:9191;", "time scale 0.01")
	runRefused(t, "missing.yaml", "nginx-config", filepath.Join(filepath.Dir(path), "missing.yaml"))
	runRefused(t, "--time-scale", "nginx-config", path, "--time-scale", "-1")
}

func TestNginxConfigSnippet(t *testing.T) {
	path := filepath.Join("..", "..", "scenarios", "stock-balance.yaml")
	out := runWant(t, []string{"nginx-config", path, "--snippet", "--headers=false"},
		"# ---- http {} part", "limit_conn_zone $host", "# ---- server {} part", "add_header is inherited only by a block that has none of its own")
	for _, bad := range []string{"X-Stampede", "worker_processes", "server {\n"} {
		if strings.Contains(out, bad) {
			t.Errorf("--snippet --headers=false has %q:\n%s", bad, out)
		}
	}
}
