package sim

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps the simulator apart from the live shells: it plays the
// same cores in virtual time and must not reach net/http or Prometheus
// through any of its imports.
func TestDeps(t *testing.T) {
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
	for _, d := range deps {
		if d == "net/http" || strings.Contains(d, "prometheus") {
			t.Errorf("package sim depends on %s", d)
		}
	}
}
