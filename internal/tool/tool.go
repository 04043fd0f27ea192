package tool

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Program is an external program a test needs. The zero value is not
// useful; every field is required. A Program is safe for concurrent use.
type Program struct {
	Name       string // the binary's name in PATH, e.g. "nginx"
	DebianPath string // where Debian installs it; looked at first
	Package    string // the Debian package that brings it
	RequireEnv string // set to 1, a missing program fails the test
}

// Path returns the program's binary: DebianPath when it is there, else Name
// from PATH. ok is false when there is neither.
func (p Program) Path() (path string, ok bool) {
	if _, err := os.Stat(p.DebianPath); err == nil {
		return p.DebianPath, true
	}
	path, err := exec.LookPath(p.Name)
	if err != nil {
		return "", false
	}
	return path, true
}

// Require returns the program's binary. When there is none it skips the
// test, saying why, or fails it when RequireEnv is set to 1.
func (p Program) Require(t testing.TB) string {
	t.Helper()
	if path, ok := p.Path(); ok {
		return path
	}
	if os.Getenv(p.RequireEnv) == "1" {
		t.Fatalf("%s is required (%s=1) but is neither at %s nor in PATH", p.Name, p.RequireEnv, p.DebianPath)
	}
	t.Skipf("%s is neither at %s nor in PATH (apt-get install %s); set %s=1 to make this a failure", p.Name, p.DebianPath, p.Package, p.RequireEnv)
	return ""
}

// Deps returns what `go list -deps` lists for the package in the test's
// working directory, the package itself included. It skips the test where
// go is not on PATH and fails it where go list fails.
func Deps(t testing.TB) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH:", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 2 {
		t.Fatalf("go list -deps lists %q, want the package and its dependencies", deps)
	}
	return deps
}
