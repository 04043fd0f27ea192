package limit

import (
	"strings"
	"testing"

	"stampede/internal/tool"
)

// TestDeps keeps the cores pure: package limit must not depend on net/http,
// Prometheus or YAML, so that the simulator can use it without them.
func TestDeps(t *testing.T) {
	for _, d := range tool.Deps(t) {
		if d == "net/http" || strings.Contains(d, "prometheus") || strings.Contains(d, "yaml") {
			t.Errorf("package limit depends on %s", d)
		}
	}
}
