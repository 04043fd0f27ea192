package testproc

import (
	"os"
	"testing"

	"stampede/internal/testlock"
)

// TestMain keeps this package's tests from running beside the live
// engine's wall-clock tests (see package testlock). Run as a child of
// TestInherit, it is that test's server instead.
func TestMain(m *testing.M) {
	if dir := os.Getenv(inheritChildEnv); dir != "" {
		os.Exit(serveInherited(dir))
	}
	os.Exit(testlock.Main(m))
}
