package testproc

import (
	"os"
	"testing"

	"stampede/internal/testlock"
)

// TestMain keeps this package's tests from running beside the live
// engine's wall-clock tests (see package testlock).
func TestMain(m *testing.M) { os.Exit(testlock.Main(m)) }
