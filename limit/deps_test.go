package limit

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps the cores pure: package limit must not depend on net/http,
// Prometheus or YAML, so that the simulator can use it without them.
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
		if d == "net/http" || strings.Contains(d, "prometheus") || strings.Contains(d, "yaml") {
			t.Errorf("package limit depends on %s", d)
		}
	}
}
