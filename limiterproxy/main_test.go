package limiterproxy

import (
	"os"
	"testing"

	"stampede/internal/testlock"
	"stampede/limit"
)

// TestMain keeps this package's tests from running beside the live
// engine's wall-clock tests (see package testlock).
func TestMain(m *testing.M) { os.Exit(testlock.Main(m)) }

func mustPolicy(t testing.TB, cfg limit.Config) *limit.Policy {
	t.Helper()
	p, err := limit.NewPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
