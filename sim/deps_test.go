package sim

import (
	"strings"
	"testing"

	"stampede/internal/tool"
)

// TestDeps keeps the simulator apart from the live shells: it plays the
// same cores in virtual time and must not reach net/http or Prometheus
// through any of its imports.
func TestDeps(t *testing.T) {
	for _, d := range tool.Deps(t) {
		if d == "net/http" || strings.Contains(d, "prometheus") {
			t.Errorf("package sim depends on %s", d)
		}
	}
}
