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
	// What Next reads for an arrival within a stage comes first, so that
	// an engine holding many tenants' Arrivals touches one cache line.
	next     time.Duration // the arrival Next returns next
	stageEnd time.Duration // the current stage's end; <= stop
	cur      float64       // the current stage's rate, above 0
	gap      time.Duration // constant: the current stage's spacing
	rng      *rand.Rand
	trace    *traceState // set by ResetTrace: the arrivals are a recorded trace
	more     bool        // next is valid; false in the zero Arrivals
	constant bool
	i        int32 // the current stage

	stageBegin time.Duration     // the current stage's beginning
	stages     []scenarios.Stage // nil: one stage at rate until stop
	rate       float64           // requests per second, when stages is nil
	stop       time.Duration     // no arrival at or after this
}

// NewArrivals returns the arrivals of load (Open model) between load.Start
// and its stop (Stop(load, horizon)), drawn from rng.
func NewArrivals(load *scenarios.Load, horizon time.Duration, rng *rand.Rand) *Arrivals {
	a := &Arrivals{}
	a.Reset(load, horizon, rng)
	return a
}

// Reset makes a the arrivals NewArrivals(load, horizon, rng) would return,
// reusing a's memory.
func (a *Arrivals) Reset(load *scenarios.Load, horizon time.Duration, rng *rand.Rand) {
	stop := Stop(load, horizon)
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
func (a *Arrivals) enter(i int32, t time.Duration) bool {
	for ; t < a.stop; i++ {
		rate, end := a.rate, a.stop
		if a.stages == nil {
			if i > 0 {
				return false
			}
		} else {
			if int(i) >= len(a.stages) {
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
	if a.trace != nil {
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

// Peek returns the intended send time Next returns next, if any; it reads
// the cache line Next reads first.
func (a *Arrivals) Peek() time.Duration { return a.next }

// Mix picks routes by weight. The zero Mix always picks route 0.
//
// A Mix is immutable after NewMix and safe for concurrent use (each caller
// brings its own *rand.Rand); Pick does not allocate and draws nothing when
// there is only one route.
type Mix struct {
	first int       // the route when there is one; routes[0] otherwise
	table *mixTable // nil when there is one route
}

// mixTable is a Mix of several routes, shared by the copies of the Mix.
type mixTable struct {
	routes []int     // route index per entry
	cum    []float64 // cumulative weights, strictly increasing
}

// NewMix returns a mix over routes. Routes with a weight that is not
// positive are never picked; when no weight is positive the first route is
// always picked.
func NewMix(routes []scenarios.WeightedRoute) Mix {
	var m mixTable
	total := 0.0
	for _, r := range routes {
		if !(r.Weight > 0) || math.IsInf(r.Weight, 0) {
			continue
		}
		total += r.Weight
		m.routes = append(m.routes, r.Route)
		m.cum = append(m.cum, total)
	}
	switch {
	case len(m.routes) == 0 && len(routes) > 0:
		return Mix{first: routes[0].Route}
	case len(m.routes) == 0:
		return Mix{}
	case len(m.routes) == 1:
		return Mix{first: m.routes[0]}
	}
	return Mix{first: m.routes[0], table: &m}
}

// Pick returns a route index (into the scenario's Backend.Routes) drawn from
// rng.
func (m Mix) Pick(rng *rand.Rand) int {
	if m.table == nil {
		return m.first
	}
	return m.table.pick(rng)
}

// pick is Pick over two routes or more.
func (m *mixTable) pick(rng *rand.Rand) int {
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

// Stream is a tenant's random stream held by value: the draws of
// TenantRand without its two allocations, for an engine that keeps the
// state of many tenants side by side. The zero Stream is not ready; use
// Reset. A Stream must not be copied after Reset.
type Stream struct {
	pcg rand.PCG
	r   rand.Rand
}

// Reset makes s tenant's stream under seed, as TenantRand(seed, tenant),
// and returns it.
func (s *Stream) Reset(seed uint64, tenant int) *rand.Rand {
	s.pcg.Seed(seed, uint64(tenant)+1)
	s.r = *rand.New(&s.pcg)
	return &s.r
}

// Rand returns the stream Reset made.
func (s *Stream) Rand() *rand.Rand { return &s.r }
