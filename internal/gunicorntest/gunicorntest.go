package gunicorntest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"stampede/internal/testproc"
	"stampede/internal/tool"
)

// Require returns the gunicorn binary: Debian's /usr/bin/gunicorn, else gunicorn from
// PATH. When there is neither it skips the test, saying why, or fails it
// when STAMPEDE_REQUIRE_GUNICORN is set to 1.
var Require = tool.Program{Name: "gunicorn", DebianPath: "/usr/bin/gunicorn", Package: "gunicorn", RequireEnv: "STAMPEDE_REQUIRE_GUNICORN"}.Require

// Options say how to run gunicorn: its settings, as on its command line,
// and the app.
type Options struct {
	App         string        // the WSGI module's source; it must define `app`
	Workers     int           // -w; zero means 1
	Threads     int           // --threads; zero means 1 (the sync worker)
	Backlog     int           // --backlog; zero means gunicorn's 2048
	Timeout     time.Duration // --timeout, in whole seconds; zero means none (0)
	MaxRequests int           // --max-requests; zero means never
	// AccessLogFormat is --access-logformat: when set, gunicorn logs every
	// request in it to the file Server.AccessLog names; when empty it
	// keeps no access log.
	AccessLogFormat string
}

// Ready is the line the configuration Start writes has every worker log
// once it is ready to accept: after the app loaded, just before its loop.
const Ready = "stampede-gunicorntest-ready"

// Server is a running gunicorn.
type Server struct {
	Addr      string // host:port it listens on
	AccessLog string // the access log's path, when Options.AccessLogFormat is set
	p         *testproc.Process
}

// Log returns what gunicorn has logged so far.
func (s *Server) Log() string { return s.p.Log() }

// ReadyCount returns how many times a worker has become ready: the first
// workers and every replacement.
func (s *Server) ReadyCount() int { return strings.Count(s.p.Log(), Ready) }

// Start runs gunicorn (Require's) with opts on a free loopback port, whose
// listener it inherits, until the test ends, and returns once every first worker is ready. It fails the
// test when gunicorn exits first or is not ready within 20 seconds.
// Whenever the test fails, gunicorn's log is logged at its end.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin := Require(t)
	dir := t.TempDir()
	testproc.WriteFile(t, dir, "stampedeapp.py", []byte(opts.App))
	// A server hook marks each worker ready; gunicorn's own "Booting
	// worker" comes before the app is loaded.
	conf := "def post_worker_init(worker):\n    worker.log.info(\"" + Ready + " %s\", worker.pid)\n"
	confPath := testproc.WriteFile(t, dir, "gunicorn_conf.py", []byte(conf))
	workers := max(opts.Workers, 1)
	args := []string{"--chdir", dir, "-c", confPath, "-b", fmt.Sprintf("fd://%d", testproc.InheritedFD), "-w", strconv.Itoa(workers),
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
	accessLog := ""
	if opts.AccessLogFormat != "" {
		accessLog = filepath.Join(dir, "access.log")
		args = append(args, "--access-logfile", accessLog, "--access-logformat", opts.AccessLogFormat)
	}
	args = append(args, "stampedeapp:app")
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	// gunicorn takes over a listener the test holds (--bind fd://3), so no
	// other process can take the port first; it sets its own --backlog on it.
	ln := testproc.Inherit(t, cmd)
	// SIGINT: gunicorn's quick shutdown, without waiting for requests.
	s := &Server{Addr: ln.Addr, AccessLog: accessLog, p: ln.Start(t, cmd, syscall.SIGINT, "gunicorn "+strings.Join(args, " "))}
	if err := s.p.Wait(20*time.Second, func() bool { return s.ReadyCount() >= workers }); err != nil {
		t.Fatalf("gunicorn's %d workers were not ready: %v\n%s", workers, err, s.Log())
	}
	return s
}

// String describes s for failure messages.
func (s *Server) String() string { return fmt.Sprintf("gunicorn on %s", s.Addr) }
