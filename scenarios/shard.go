package scenarios

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// This file splits a scenario's tenants into shards: the parts of one run
// that several processes (the pods of a Kubernetes Indexed Job) play at once
// against one target.

// MaxShards bounds the number of shards of one run.
const MaxShards = 1000

// minCycle is the shortest request cycle ExpectedRate assumes for a
// closed-model user, so that think: 0s in front of a zero service time
// weighs as a busy user rather than an infinite one.
const minCycle = time.Millisecond

// Piece is the share of one tenant that one shard plays.
//
// A tenant is played whole (Of = 1) unless its expected load exceeds a
// shard's share of the run's load (the total over the shard count): then it
// is cut into Of pieces of about equal load, each on a different shard. A
// closed-model tenant is cut by its users (piece J plays Users of them, the
// users summing to the tenant's); an open-model tenant by its arrivals
// (each piece sends at 1/Of of every rate, with its own random stream, and
// 1/Of of its max_in_flight, rounded up). The pieces keep the tenant's
// name, group and host, so merging the shards' results counts it as one.
type Piece struct {
	Tenant int     // the tenant's index in the whole scenario's Expand()
	J, Of  int     // piece J (from 0) of Of; 0 of 1 for a whole tenant
	Users  int     // closed model: the users this piece plays; 0 for open
	Load   float64 // its expected requests per second
}

// ShardLoad is what PlanShards needs of a tenant: its expected load and, for
// a closed model, its users (the most pieces it can be cut into). Users 0
// means it can be cut into any number of pieces (an open model).
type ShardLoad struct {
	Load  float64
	Users int
}

// PlanShards assigns tenants to n shards (n ≥ 1) and returns, per shard, the
// pieces it plays in tenant order. It is deterministic (the same input gives
// the same plan) and pure.
//
// Every tenant is in exactly one shard but one heavier than the share
// (total load / n): it is cut into min(n, ⌈load/share⌉) pieces (no more than
// its users), each on a different shard. Pieces are placed heaviest first,
// each on the least loaded shard that does not hold a piece of the same
// tenant (ties: the one with fewer pieces, then the lower index), which
// keeps the heaviest shard within one piece of the lightest.
func PlanShards(loads []ShardLoad, n int) [][]Piece {
	if n < 1 {
		n = 1
	}
	total := 0.0
	for _, l := range loads {
		total += max(l.Load, 0)
	}
	share := total / float64(n)
	var pieces []Piece
	for i, l := range loads {
		w := max(l.Load, 0)
		of := 1
		if share > 0 && w > share*(1+1e-9) {
			of = min(n, int(math.Ceil(w/share-1e-9)))
			if l.Users > 0 {
				of = min(of, l.Users)
			}
		}
		for j := range of {
			p := Piece{Tenant: i, J: j, Of: of, Load: w / float64(of)}
			if l.Users > 0 {
				p.Users = l.Users / of
				if j < l.Users%of {
					p.Users++
				}
				p.Load = w * float64(p.Users) / float64(l.Users)
			}
			pieces = append(pieces, p)
		}
	}
	order := slices.Clone(pieces)
	slices.SortStableFunc(order, func(a, b Piece) int {
		switch {
		case a.Load > b.Load:
			return -1
		case a.Load < b.Load:
			return 1
		}
		return 0 // stable: tenant order, then piece order
	})
	shards := make([][]Piece, n)
	load := make([]float64, n)
	for _, p := range order {
		best := -1
		for s := range n {
			if p.Of > 1 && slices.ContainsFunc(shards[s], func(q Piece) bool { return q.Tenant == p.Tenant }) {
				continue
			}
			if best < 0 || load[s] < load[best] || load[s] == load[best] && len(shards[s]) < len(shards[best]) {
				best = s
			}
		}
		shards[best] = append(shards[best], p)
		load[best] += p.Load
	}
	for s := range shards {
		slices.SortFunc(shards[s], func(a, b Piece) int {
			if a.Tenant != b.Tenant {
				return a.Tenant - b.Tenant
			}
			return a.J - b.J
		})
	}
	return shards
}

// ExpectedRate returns the requests per second l is expected to send,
// averaged over a run of duration: an open model's rate (its stages' rates
// weighted by their time), a closed model's users over their cycle (think
// plus the mean service time of its routes, at least a millisecond), bounded
// by its iterations; both over the part of the run the load is active.
func ExpectedRate(l *Load, routes []Route, duration time.Duration) float64 {
	if duration <= 0 {
		return 0
	}
	start, stop := max(l.Start, 0), l.End(duration)
	active := (stop - start).Seconds()
	if active <= 0 {
		return 0
	}
	var n float64 // expected requests
	if l.Model == Open {
		if len(l.Stages) == 0 {
			n = l.Rate * active
		} else {
			t := start
			for _, st := range l.Stages {
				end := min(t+max(st.Duration, 0), stop)
				if end > t {
					n += st.Rate * (end - t).Seconds()
				}
				t = end
			}
		}
	} else {
		var service, weight float64
		for _, wr := range l.Routes {
			if wr.Route >= 0 && wr.Route < len(routes) && routes[wr.Route].Service != nil && wr.Weight > 0 {
				service += wr.Weight * routes[wr.Route].Service.Mean().Seconds()
				weight += wr.Weight
			}
		}
		if weight > 0 {
			service /= weight
		}
		cycle := max(l.Think.Seconds()+service, minCycle.Seconds())
		n = float64(l.Users) * active / cycle
		if l.Iterations > 0 {
			n = min(n, float64(l.Users)*float64(l.Iterations))
		}
	}
	return n / duration.Seconds()
}

// ShardLoads returns PlanShards' input for s: one ShardLoad per tenant of
// s.Expand().
func (s *Scenario) ShardLoads() []ShardLoad {
	ts := s.Expand()
	out := make([]ShardLoad, len(ts))
	for i, t := range ts {
		out[i].Load = ExpectedRate(t.Load, s.Backend.Routes, s.Duration)
		if t.Load.Model == Closed {
			out[i].Users = t.Load.Users
		}
	}
	return out
}

// Shard returns the scenario that shard index (from 0) of count plays: s with
// only the tenants, or pieces of tenants, PlanShards gives that shard.
// Tenants keep their name, group, host and Index, so their random streams
// are the ones the whole run draws; a piece after a tenant's first takes an
// Index past the whole scenario's tenants (its own stream). The groups, the
// backend, the proxy and the SLOs are the whole run's. A shard may hold no
// tenant at all. Count 1 gives a copy of s.
func (s *Scenario) Shard(index, count int) (*Scenario, error) {
	if count < 1 || count > MaxShards || index < 0 || index >= count {
		return nil, fmt.Errorf("scenario %s: shard %d/%d: want 0 ≤ index < count ≤ %d", s.Name, index, count, MaxShards)
	}
	if s.part != nil {
		return nil, fmt.Errorf("scenario %s: shard %d/%d of a shard", s.Name, index, count)
	}
	all := s.Expand()
	plan := PlanShards(s.ShardLoads(), count)
	// Extra pieces are numbered past the whole run's tenants, in tenant
	// and piece order, the same in every shard.
	var extra []Piece
	for _, sh := range plan {
		for _, p := range sh {
			if p.J > 0 {
				extra = append(extra, p)
			}
		}
	}
	slices.SortFunc(extra, func(a, b Piece) int {
		if a.Tenant != b.Tenant {
			return a.Tenant - b.Tenant
		}
		return a.J - b.J
	})
	extraIndex := func(p Piece) int {
		return len(all) + slices.IndexFunc(extra, func(q Piece) bool { return q.Tenant == p.Tenant && q.J == p.J })
	}
	c := *s
	c.part = make([]Tenant, 0, len(plan[index]))
	for _, p := range plan[index] {
		t := all[p.Tenant]
		if p.Of > 1 {
			t.Load = pieceLoad(t.Load, p)
			if p.J > 0 {
				t.Index = extraIndex(p)
			}
		}
		c.part = append(c.part, t)
	}
	c.shard = ShardOf{Index: index, Count: count}
	return &c, nil
}

// ShardOf says which shard of a run a scenario is; the zero value is the
// whole run.
type ShardOf struct {
	Index, Count int
}

// ShardOf returns which shard s is (Scenario.Shard); Count is 0 for a
// whole run.
func (s *Scenario) ShardOf() ShardOf { return s.shard }

// pieceLoad returns l cut down to piece p.
func pieceLoad(l *Load, p Piece) *Load {
	c := *l
	if l.Model == Closed {
		c.Users = p.Users
		return &c
	}
	f := 1 / float64(p.Of)
	c.Rate = l.Rate * f
	if len(l.Stages) > 0 {
		c.Stages = make([]Stage, len(l.Stages))
		for i, st := range l.Stages {
			c.Stages[i] = Stage{Duration: st.Duration, Rate: st.Rate * f}
		}
	}
	if l.MaxInFlight > 0 {
		c.MaxInFlight = (l.MaxInFlight + p.Of - 1) / p.Of
	}
	return &c
}
