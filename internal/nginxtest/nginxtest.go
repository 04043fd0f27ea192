package nginxtest

import (
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"stampede/internal/tool"
)

// DebianPath is where Debian installs nginx. Path looks there first.
const DebianPath = "/usr/sbin/nginx"

// RequireEnv is the environment variable that, set to 1, makes Require fail
// a test that it would otherwise skip for want of nginx.
const RequireEnv = "STAMPEDE_REQUIRE_NGINX"

// program is nginx as tests look for it.
var program = tool.Program{Name: "nginx", DebianPath: DebianPath, Package: "nginx", RequireEnv: RequireEnv}

// Path returns the nginx binary: DebianPath when it is there, else nginx
// from PATH. ok is false when there is neither.
func Path() (path string, ok bool) { return program.Path() }

// Require returns the nginx binary. When there is none it skips the test,
// saying why, or fails it when RequireEnv is set to 1.
func Require(t testing.TB) string {
	t.Helper()
	return program.Require(t)
}

// Start runs nginx (Require's) with the configuration that conf writes for
// nginx to listen on listen, a free loopback address, until the test ends,
// and returns its base URL, "http://" + listen, once nginx accepts
// connections there. It fails the test when nginx exits first or does not
// listen within 10 seconds. Whenever the test fails, the configuration and
// nginx's output are logged at its end.
func Start(t testing.TB, conf func(w io.Writer, listen string) error) string {
	t.Helper()
	nginx := Require(t)
	dir := t.TempDir()
	// nginx takes its port from the configuration: find a free one. Another
	// process may take it before nginx does; nginx then fails to bind and
	// says so below.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	var cfg bytes.Buffer
	if err := conf(&cfg, addr); err != nil {
		t.Fatal(err)
	}
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, cfg.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	var out lockedBuffer
	cmd := exec.Command(nginx, "-p", dir, "-c", confPath, "-e", "stderr", "-g", "daemon off; master_process on;")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", nginx, err)
	}
	// exited is closed once nginx has exited, with waitErr set, so that both
	// the wait below and the cleanup may see it.
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		// SIGQUIT would wait for the requests in flight; the test is over.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("nginx configuration:\n%s\nnginx's output:\n%s", cfg.String(), out.String())
		}
	})

	// nginx says nothing when it is ready: it is when its port answers.
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	retry := time.NewTicker(20 * time.Millisecond)
	defer retry.Stop()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return "http://" + addr
		}
		select {
		case <-exited:
			t.Fatalf("nginx exited before listening on %s: %v", addr, waitErr)
		case <-deadline.C:
			t.Fatalf("nginx did not listen on %s within 10 s", addr)
		case <-retry.C:
		}
	}
}

// lockedBuffer is a bytes.Buffer that nginx's output copier may write while
// the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
