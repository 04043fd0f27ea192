package nginxtest

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"stampede/internal/testproc"
	"stampede/internal/tool"
)

// Require returns the nginx binary: Debian's /usr/sbin/nginx, else nginx from
// PATH. When there is neither it skips the test, saying why, or fails it
// when STAMPEDE_REQUIRE_NGINX is set to 1.
var Require = tool.Program{Name: "nginx", DebianPath: "/usr/sbin/nginx", Package: "nginx", RequireEnv: "STAMPEDE_REQUIRE_NGINX"}.Require

// Start runs nginx (Require's) with the configuration that conf writes for
// nginx to listen on listen, a free loopback address whose listener nginx
// inherits, until the test ends, and returns its base URL, "http://" +
// listen, once nginx accepts connections there. It fails the test when nginx exits first or does not
// listen within 10 seconds. Whenever the test fails, the configuration and
// nginx's output are logged at its end.
func Start(t testing.TB, conf func(w io.Writer, listen string) error) string {
	t.Helper()
	nginx := Require(t)
	dir := t.TempDir()
	cmd := exec.Command(nginx, "-p", dir, "-e", "stderr", "-g", "daemon off; master_process on;")
	// nginx takes over a listener the test holds, as a new nginx binary
	// takes its predecessor's, so no other process can take the port first.
	ln := testproc.Inherit(t, cmd)
	cmd.Env = append(os.Environ(), fmt.Sprintf("NGINX=%d;", testproc.InheritedFD))
	var cfg bytes.Buffer
	if err := conf(&cfg, ln.Addr); err != nil {
		t.Fatal(err)
	}
	confPath := testproc.WriteFile(t, dir, "nginx.conf", cfg.Bytes())
	cmd.Args = append(cmd.Args, "-c", confPath)
	// SIGTERM: SIGQUIT would wait for the requests in flight; the test is over.
	p := ln.Start(t, cmd, syscall.SIGTERM, "nginx configuration:\n"+cfg.String())
	// nginx says nothing when it is ready: it is when it accepts.
	if err := p.Wait(10*time.Second, ln.Accepting); err != nil {
		t.Fatalf("nginx did not accept on %s: %v", ln.Addr, err)
	}
	return "http://" + ln.Addr
}

// Conf returns a whole nginx.conf whose http {} block holds http, after
// the settings every test's nginx needs: the pid file and the temporary
// files under nginx's prefix (Start's temporary directory), no access log
// and nginx's default events {}.
func Conf(http string) string {
	return `pid nginx.pid;
events {}
http {
    access_log off;
    client_body_temp_path client_body_temp;
    proxy_temp_path proxy_temp;
    fastcgi_temp_path fastcgi_temp;
    uwsgi_temp_path uwsgi_temp;
    scgi_temp_path scgi_temp;
` + http + `
}
`
}
