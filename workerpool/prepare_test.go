package workerpool

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestPrepare checks that a prepared Dist draws exactly what the original
// draws from the same source, and reads the same.
func TestPrepare(t *testing.T) {
	for n, d := range []Dist{
		Constant{time.Second},
		Exp{time.Second},
		Uniform{time.Minute, 2 * time.Minute},
		LogNormal{30 * time.Millisecond, 200 * time.Millisecond},
		LogNormal{time.Second, time.Second},
		LogNormal{time.Nanosecond, 1<<63 - 1},
	} {
		p := Prepare(d)
		if p.String() != d.String() || p.Mean() != d.Mean() {
			t.Errorf("step %d: Prepare(%v) reads %v, mean %v; want %v, mean %v", n, d, p, p.Mean(), d, d.Mean())
		}
		a, b := rand.New(rand.NewPCG(1, uint64(n))), rand.New(rand.NewPCG(1, uint64(n)))
		for i := range 10000 {
			if got, want := p.Sample(a), d.Sample(b); got != want {
				t.Fatalf("step %d: %v: draw %d: got %v, want %v", n, d, i, got, want)
			}
		}
	}
}
