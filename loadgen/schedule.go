package loadgen

import (
	"math/rand/v2"
	"time"

	"stampede/scenarios"
)

// This file fixes the schedule API the engines share. Bodies marked
// "unimplemented" are to be filled in.

// Arrivals yields an open-model tenant's intended send times, in model time
// from the start of the run, deterministic for its seed. It is pure: nothing
// here sleeps.
type Arrivals struct{}

// NewArrivals returns the arrivals of load (Open model) between load.Start
// and its stop (load.Stop, or horizon when that is zero), drawn from rng.
func NewArrivals(load *scenarios.Load, horizon time.Duration, rng *rand.Rand) *Arrivals {
	panic("unimplemented")
}

// Next returns the next intended send time, or false when there is none.
func (a *Arrivals) Next() (time.Duration, bool) { panic("unimplemented") }

// Mix picks routes by weight. The zero Mix always picks route 0.
type Mix struct{}

// NewMix returns a mix over routes.
func NewMix(routes []scenarios.WeightedRoute) Mix { panic("unimplemented") }

// Pick returns a route index drawn from rng.
func (m Mix) Pick(rng *rand.Rand) int { panic("unimplemented") }

// TenantRand returns the random source of tenant i under seed: one stream
// per tenant, so adding a tenant does not change the others' draws.
func TenantRand(seed uint64, tenant int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(tenant)+1))
}
