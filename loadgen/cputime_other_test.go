//go:build !unix

package loadgen

import (
	"testing"
	"time"
)

// cpuTime is zero where getrusage is not known: CPU per arrival is not
// measured there.
func cpuTime(b *testing.B) time.Duration { return 0 }
