package workload

import (
	"math"
	"math/rand/v2"
	"time"

	"stampede/scenarios"
)

// Arrivals yields an open-model tenant's intended send times, in model time
// from the start of the run, deterministic for its seed. It is pure: nothing
// here sleeps.
//
// The rate is piecewise constant: Load.Rate from Load.Start on, or, when
// Load.Stages is set, each stage's rate for its duration, the first stage
// beginning at Load.Start; after the last stage nothing more arrives.
// Poisson arrivals draw exponential gaps at the current stage's rate; a gap
// that crosses into the next stage is redrawn from the boundary at the new
// rate, which is exact because the exponential is memoryless. Constant
// arrivals are evenly spaced 1/rate apart; the first falls at a random phase
// within the first gap (so that many tenants with one rate do not all send
// at the same instant), and at a stage boundary the unspent fraction of the
// current gap carries over to the next stage's spacing.
//
// The zero Arrivals yields nothing. An Arrivals is not safe for concurrent
// use; Next does not allocate.
type Arrivals struct {
	rng      *rand.Rand
	constant bool
	stages   []scenarios.Stage // nil: one stage at rate until stop
	rate     float64           // requests per second, when stages is nil
	stop     time.Duration     // no arrival at or after this

	i          int           // the current stage
	stageBegin time.Duration // the current stage's bounds; stageEnd <= stop
	stageEnd   time.Duration
	cur        float64       // the current stage's rate, above 0
	gap        time.Duration // constant: the current stage's spacing
	next       time.Duration // the arrival Next returns next
	more       bool          // next is valid; false in the zero Arrivals

	trace traceState // set by ResetTrace: the arrivals are a recorded trace
}

// NewArrivals returns the arrivals of load (Open model) between load.Start
// and its stop, drawn from rng. The stop is load.Stop, or horizon when
// load.Stop is zero or, with a horizon above zero, past it.
func NewArrivals(load *scenarios.Load, horizon time.Duration, rng *rand.Rand) *Arrivals {
	a := &Arrivals{}
	a.Reset(load, horizon, rng)
	return a
}

// Reset makes a the arrivals NewArrivals(load, horizon, rng) would return,
// reusing a's memory.
func (a *Arrivals) Reset(load *scenarios.Load, horizon time.Duration, rng *rand.Rand) {
	stop := load.Stop
	if stop <= 0 || horizon > 0 && stop > horizon {
		stop = horizon
	}
	*a = Arrivals{
		rng:      rng,
		constant: load.Arrivals == scenarios.Constant,
		stages:   load.Stages,
		rate:     load.Rate,
		stop:     stop,
	}
	if len(a.stages) == 0 {
		a.stages = nil
	}
	start := max(load.Start, 0)
	if rng == nil || !a.enter(0, start) {
		return
	}
	a.more = true
	if a.constant {
		a.place(start + time.Duration(rng.Float64()*float64(a.gap)))
		return
	}
	a.poisson(start)
}

// enter makes stage i, beginning at t, the current one, skipping stages
// without arrivals. It reports false when no stage with arrivals begins
// before stop.
func (a *Arrivals) enter(i int, t time.Duration) bool {
	for ; t < a.stop; i++ {
		rate, end := a.rate, a.stop
		if a.stages == nil {
			if i > 0 {
				return false
			}
		} else {
			if i >= len(a.stages) {
				return false
			}
			rate = a.stages[i].Rate
			if d := a.stages[i].Duration; d < end-t {
				end = t + max(d, 0)
			}
		}
		if rate > 0 && !math.IsInf(rate, 0) {
			a.i, a.stageBegin, a.stageEnd, a.cur = i, t, end, rate
			a.gap = max(time.Duration(math.Round(float64(time.Second)/rate)), 1)
			return true
		}
		t = end
	}
	return false
}

// place makes t, an arrival one gap after the previous one at the current
// stage's spacing, the next arrival. When t lies past the stage, the part of
// the gap still owed at the boundary is spent at the following stages'
// spacing (constant arrivals).
func (a *Arrivals) place(t time.Duration) {
	if t < a.stageEnd {
		a.next = t
		return
	}
	owed := float64(t-a.stageEnd) / float64(a.gap) // in gaps
	for a.enter(a.i+1, a.stageEnd) {
		t = a.stageBegin + time.Duration(owed*float64(a.gap))
		if t < a.stageEnd {
			a.next = t
			return
		}
		owed -= float64(a.stageEnd-a.stageBegin) / float64(a.gap)
	}
	a.more = false
}

// poisson draws the arrival after t (Poisson arrivals).
func (a *Arrivals) poisson(t time.Duration) {
	for {
		n := float64(t) + a.rng.ExpFloat64()/a.cur*float64(time.Second)
		if n < float64(a.stageEnd) {
			a.next = time.Duration(n)
			return
		}
		if !a.enter(a.i+1, a.stageEnd) {
			a.more = false
			return
		}
		t = a.stageBegin
	}
}

// Next returns the next intended send time, or false when there is none.
func (a *Arrivals) Next() (time.Duration, bool) {
	if a.trace.on {
		return a.nextTraced()
	}
	if !a.more {
		return 0, false
	}
	t := a.next
	if a.constant {
		a.place(t + a.gap)
	} else {
		a.poisson(t)
	}
	return t, true
}

// Mix picks routes by weight. The zero Mix always picks route 0.
//
// A Mix is immutable after NewMix and safe for concurrent use (each caller
// brings its own *rand.Rand); Pick does not allocate and draws nothing when
// there is only one route.
type Mix struct {
	routes []int     // route index per entry
	cum    []float64 // cumulative weights, strictly increasing
}

// NewMix returns a mix over routes. Routes with a weight that is not
// positive are never picked; when no weight is positive the first route is
// always picked.
func NewMix(routes []scenarios.WeightedRoute) Mix {
	var m Mix
	total := 0.0
	for _, r := range routes {
		if !(r.Weight > 0) || math.IsInf(r.Weight, 0) {
			continue
		}
		total += r.Weight
		m.routes = append(m.routes, r.Route)
		m.cum = append(m.cum, total)
	}
	if len(m.routes) == 0 && len(routes) > 0 {
		m.routes = []int{routes[0].Route}
		m.cum = []float64{1}
	}
	return m
}

// Pick returns a route index (into the scenario's Backend.Routes) drawn from
// rng.
func (m Mix) Pick(rng *rand.Rand) int {
	switch len(m.routes) {
	case 0:
		return 0
	case 1:
		return m.routes[0]
	}
	x := rng.Float64() * m.cum[len(m.cum)-1]
	// Mixes are short: a linear scan beats a binary search up to a dozen
	// routes, and a binary search takes over beyond.
	if len(m.cum) <= 12 {
		for i, c := range m.cum {
			if x < c {
				return m.routes[i]
			}
		}
		return m.routes[len(m.routes)-1]
	}
	lo, hi := 0, len(m.cum)-1
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if x < m.cum[mid] {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return m.routes[lo]
}

// TenantRand returns the random source of tenant i under seed: one stream
// per tenant, so adding a tenant does not change the others' draws.
func TenantRand(seed uint64, tenant int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(tenant)+1))
}
