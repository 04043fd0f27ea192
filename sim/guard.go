package sim

import (
	"errors"
	"fmt"
	"math"
	"time"

	"stampede/scenarios"
)

// ErrStalled is wrapped by Run's error when model time stops advancing: so
// many events at one model instant that the run could never end (a
// livelock), which Run turns into an error rather than a hang.
var ErrStalled = errors.New("model time stopped advancing")

// ErrEventLimit is wrapped by Run's error when the run has processed
// Options.MaxEvents events.
var ErrEventLimit = errors.New("event limit reached")

// stallBase is the events one model instant may hold beyond stallPerActor
// per tenant and user, before the guard calls it a livelock. Every tenant
// and user can start at one instant and each of their requests end there
// (rejected at once), then none resends before workload.MinCycle: a legal
// instant holds a few events per actor, nowhere near this.
const (
	stallBase     = 1 << 20
	stallPerActor = 64
)

// guard watches that model time advances and the event count stays within
// its limit.
type guard struct {
	stall  uint64 // events allowed at one instant
	max    uint64 // the event that is one too many; MaxUint64 for no limit
	n      uint64 // events seen
	at     time.Duration
	sameAt uint64
}

func newGuard(sc *scenarios.Scenario, tenants int, maxEvents uint64) guard {
	actors := uint64(tenants)
	for _, g := range sc.Tenants {
		if g.Load.Model == scenarios.Closed {
			actors += uint64(max(g.Count, 1)) * uint64(max(g.Load.Users, 0))
		}
	}
	if maxEvents == 0 {
		maxEvents = math.MaxUint64
	}
	return guard{stall: stallBase + stallPerActor*actors, max: maxEvents, at: -1}
}

// ok counts an event at model time at and reports whether the run may go
// on; err says why not. It is small enough to be inlined into the event
// loop.
func (g *guard) ok(at time.Duration) bool {
	g.n++
	if at != g.at {
		g.at, g.sameAt = at, 0
	} else {
		g.sameAt++
	}
	return g.sameAt <= g.stall && g.n < g.max
}

func (g *guard) err() error {
	if g.sameAt > g.stall {
		return fmt.Errorf("%w: %d events at model time %v without time moving on (a livelock: a loop of requests that take no time)", ErrStalled, g.sameAt, g.at)
	}
	return fmt.Errorf("%w: %d events by model time %v", ErrEventLimit, g.n, g.at)
}

// fail ends the run with err, keeping the counts so far.
func (e *engine) fail(err error) error {
	e.stats.Backend = e.pool.Stats(e.stats.End)
	return fmt.Errorf("sim: scenario %s: %w", e.sc.Name, err)
}
