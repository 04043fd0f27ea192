package nginxtest

import (
	"fmt"
	"io"
	"net/http"
	"testing"
)

// TestStart serves a fixed answer from nginx and checks it comes back on
// the URL Start returns.
func TestStart(t *testing.T) {
	base := Start(t, func(w io.Writer, listen string) error {
		_, err := fmt.Fprintf(w, `pid nginx.pid;
events {}
http {
	access_log off;
	client_body_temp_path client_body_temp;
	proxy_temp_path proxy_temp;
	fastcgi_temp_path fastcgi_temp;
	uwsgi_temp_path uwsgi_temp;
	scgi_temp_path scgi_temp;
	server {
		listen %s;
		location / { return 200 "nginxtest\n"; }
	}
}
`, listen)
		return err
	})
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || string(body) != "nginxtest\n" {
		t.Fatalf("GET %s/ = %d %q, want 200 %q", base, resp.StatusCode, body, "nginxtest\n")
	}
}

// TestPath checks that Path and Require agree on the binary.
func TestPath(t *testing.T) {
	got := Require(t)
	if path, ok := Path(); !ok || path != got {
		t.Fatalf("Path() = %q, %v; Require = %q, want the same path and true", path, ok, got)
	}
}
