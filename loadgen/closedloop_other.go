//go:build !linux

package loadgen

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"

	"stampede/internal/h1"
	"stampede/workload"
)

// haveLoops says closed-model users can be played on event loops here:
// not on this system, where every user has a goroutine.
const haveLoops = false

// loopUser is what the event loops of Linux take of a user.
type loopUser struct {
	t    *tenant
	rng  *rand.Rand
	from netip.Addr
	rt   *h1.Client
	gets [][]byte
}

func (d *Driver) canLoop(*tenant) bool { return false }

// runLoops plays users on goroutines, as without loops.
func (d *Driver) runLoops(ctx context.Context, start time.Time, users []*loopUser, out chan<- workload.Result) {
	var wg sync.WaitGroup
	for _, u := range users {
		wg.Go(func() { d.user(ctx, start, u.t, u.rt, u.rng, out) })
	}
	wg.Wait()
}
