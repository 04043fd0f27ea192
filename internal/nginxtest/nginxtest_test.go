package nginxtest

import (
	"io"
	"strings"
	"testing"

	"stampede/internal/testproc"
)

// TestStart serves a fixed answer from nginx, configured by Conf, and
// checks it comes back on the URL Start returns.
func TestStart(t *testing.T) {
	base := Start(t, func(w io.Writer, listen string) error {
		_, err := io.WriteString(w, Conf(`    server {
        listen `+listen+`;
        location / { return 200 "nginxtest\n"; }
    }`))
		return err
	})
	if status, body := testproc.Get(t, base+"/"); status != 200 || body != "nginxtest\n" {
		t.Fatalf("GET %s/ = %d %q, want 200 %q", base, status, body, "nginxtest\n")
	}
}

// TestConf checks that Conf puts its argument inside http {}, after the
// temporary paths Start's prefix needs.
func TestConf(t *testing.T) {
	got := Conf("    BODY")
	http := strings.Index(got, "http {\n")
	temp := strings.Index(got, "scgi_temp_path scgi_temp;")
	body := strings.Index(got, "    BODY\n}\n")
	if !strings.HasPrefix(got, "pid nginx.pid;\n") || http < 0 || temp < http || body < temp || !strings.HasSuffix(got, "    BODY\n}\n") {
		t.Errorf("Conf(\"    BODY\") =\n%s\nwant the pid file, then http { the temporary paths, BODY }", got)
	}
}
