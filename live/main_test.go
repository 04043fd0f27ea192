package live

import (
	"os"
	"testing"

	"stampede/internal/testlock"
)

// TestMain runs this package's tests, which play scenarios many times
// faster than real time and compare what they measure with numbers, while
// no other package's tests run (see package testlock).
func TestMain(m *testing.M) { os.Exit(testlock.MainExclusive(m)) }
