package gunicorntest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"stampede/internal/tool"
)

// DebianPath is where Debian installs gunicorn. Path looks there first.
const DebianPath = "/usr/bin/gunicorn"

// RequireEnv is the environment variable that, set to 1, makes Require fail
// a test that it would otherwise skip for want of gunicorn.
const RequireEnv = "STAMPEDE_REQUIRE_GUNICORN"

// program is gunicorn as tests look for it.
var program = tool.Program{Name: "gunicorn", DebianPath: DebianPath, Package: "gunicorn", RequireEnv: RequireEnv}

// Path returns the gunicorn binary: DebianPath when it is there, else gunicorn
// from PATH. ok is false when there is neither.
func Path() (path string, ok bool) { return program.Path() }

// Require returns the gunicorn binary. When there is none it skips the test,
// saying why, or fails it when RequireEnv is set to 1.
func Require(t testing.TB) string {
	t.Helper()
	return program.Require(t)
}

// Options say how to run gunicorn: its settings, as on its command line,
// and the app.
type Options struct {
	App         string        // the WSGI module's source; it must define `app`
	Workers     int           // -w; zero means 1
	Threads     int           // --threads; zero means 1 (the sync worker)
	Backlog     int           // --backlog; zero means gunicorn's 2048
	Timeout     time.Duration // --timeout, in whole seconds; zero means none (0)
	MaxRequests int           // --max-requests; zero means never
}

// Ready is the line the configuration Start writes has every worker log
// once it is ready to accept: after the app loaded, just before its loop.
const Ready = "stampede-gunicorntest-ready"

// Server is a running gunicorn.
type Server struct {
	Addr string // host:port it listens on
	out  *lockedBuffer
}

// Log returns what gunicorn has logged so far.
func (s *Server) Log() string { return s.out.String() }

// ReadyCount returns how many times a worker has become ready: the first
// workers and every replacement.
func (s *Server) ReadyCount() int { return strings.Count(s.out.String(), Ready) }

// Start runs gunicorn (Require's) with opts on a free loopback port until
// the test ends, and returns once every first worker is ready. It fails the
// test when gunicorn exits first or is not ready within 20 seconds.
// Whenever the test fails, gunicorn's log is logged at its end.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin := Require(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "stampedeapp.py"), []byte(opts.App), 0o644); err != nil {
		t.Fatal(err)
	}
	// A server hook marks each worker ready; gunicorn's own "Booting
	// worker" comes before the app is loaded.
	conf := "def post_worker_init(worker):\n    worker.log.info(\"" + Ready + " %s\", worker.pid)\n"
	confPath := filepath.Join(dir, "gunicorn_conf.py")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	// gunicorn takes its port from the command line: find a free one.
	// Another process may take it first; gunicorn then fails to bind and
	// says so below.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	workers := max(opts.Workers, 1)
	args := []string{"--chdir", dir, "-c", confPath, "-b", addr, "-w", strconv.Itoa(workers),
		"--log-level", "info", "--worker-tmp-dir", dir,
		"--timeout", strconv.Itoa(int(opts.Timeout / time.Second))}
	if opts.Threads > 1 {
		args = append(args, "--threads", strconv.Itoa(opts.Threads))
	}
	if opts.Backlog > 0 {
		args = append(args, "--backlog", strconv.Itoa(opts.Backlog))
	}
	if opts.MaxRequests > 0 {
		args = append(args, "--max-requests", strconv.Itoa(opts.MaxRequests))
	}
	args = append(args, "stampedeapp:app")
	out := &lockedBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		// SIGINT: gunicorn's quick shutdown, without waiting for requests.
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("gunicorn %s:\n%s", strings.Join(args, " "), out.String())
		}
	})
	s := &Server{Addr: addr, out: out}
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	for s.ReadyCount() < workers {
		select {
		case <-exited:
			t.Fatalf("gunicorn exited before its workers were ready: %v\n%s", waitErr, out.String())
		case <-deadline.C:
			t.Fatalf("gunicorn's %d workers were not ready within 20 s:\n%s", workers, out.String())
		case <-poll.C:
		}
	}
	return s
}

// String describes s for failure messages.
func (s *Server) String() string { return fmt.Sprintf("gunicorn on %s", s.Addr) }

// lockedBuffer is a bytes.Buffer that gunicorn's output copier may write
// while the test reads it.
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
