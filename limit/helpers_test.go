package limit

import (
	"math/rand/v2"
	"sync"
)

// runConcurrently runs f in n goroutines at once, goroutine g with a
// random source of its own seeded (g, seed), and waits for them all.
func runConcurrently(n int, seed uint64, f func(g int, rng *rand.Rand)) {
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() { f(g, rand.New(rand.NewPCG(uint64(g), seed))) })
	}
	wg.Wait()
}
