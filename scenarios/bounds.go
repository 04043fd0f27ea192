package scenarios

import (
	"time"

	"go.yaml.in/yaml/v3"

	"stampede/workerpool"
)

// Bounds on the products that drive a run's cost. Each field is bounded on
// its own where it is read; these bound them together, so that a file of
// modest numbers cannot ask for a billion users or a year of events. Each
// limit is far above what a run of a real incident asks (the incident of
// STORY.txt is 250 sites, 8 users and 10 minutes) and below what would
// exhaust a machine before the run could report anything.
const (
	// MaxUsers bounds the closed-model users of a run, count × users summed
	// over the groups: each is a goroutine in the live engine (about 8 KiB)
	// and a few events in flight in the sim.
	MaxUsers = 1_000_000
	// MaxRequests bounds the requests a run is expected to send (open
	// models: rate × active time × count; closed: users × active time over
	// their cycle, at most their iterations): the sim schedules about three
	// events per request, and 10⁹ requests are minutes of its time and the
	// live engine's days.
	MaxRequests = 1e9
	// MaxRate bounds the requests per second all open-model tenants send
	// at once at their peaks: ten million a second is beyond any generator and any
	// proxy in front of one app server.
	MaxRate = 1e7
	// MaxDuration bounds a run's duration: 30 days of model time.
	MaxDuration = 30 * 24 * time.Hour
	// MinTimeScale bounds time_scale from below: 10,000× faster than real
	// time plays an hour in 0.36 s; a smaller scale would make the model's
	// milliseconds shorter than the clock can time.
	MinTimeScale = 1e-4
)

// bounds checks s, decoded from root without mistakes, against the bounds
// above, at the lines of the fields that drive each product.
func (d *decoder) bounds(root *yaml.Node, s *Scenario) {
	if s.Duration > MaxDuration {
		d.fail(nodeAt(root, "duration"), "duration", nil, "%s is longer than %s, the longest run stampede plays (want e.g. 10m)", workerpool.FormatDuration(s.Duration), workerpool.FormatDuration(MaxDuration))
		return
	}
	if s.TimeScale > 0 && s.TimeScale < MinTimeScale {
		d.fail(nodeAt(root, "time_scale"), "time_scale", nil, "%g is below %g: 10,000× faster than real time is the fastest a live run can time (want e.g. 0.01)", s.TimeScale, MinTimeScale)
	}
	var users, requests, rate float64
	heaviest := [3]int{-1, -1, -1} // the group of the most users, requests, rate
	var most [3]float64
	for i, g := range s.Tenants {
		count := float64(max(g.Count, 1))
		l := &g.Load
		var u, n, r float64
		if l.Model == Closed {
			u = count * float64(l.Users)
		} else {
			r = l.Rate
			for _, st := range l.Stages {
				r = max(r, st.Rate)
			}
			r *= count
		}
		n = count * ExpectedRate(l, s.Backend.Routes, s.Duration) * s.Duration.Seconds()
		for k, v := range [3]float64{u, n, r} {
			if v > most[k] {
				most[k], heaviest[k] = v, i
			}
		}
		users, requests, rate = users+u, requests+n, rate+r
	}
	group := func(k int, keys ...string) (*yaml.Node, string) {
		i := heaviest[k]
		path := index("tenants", i)
		for _, key := range keys {
			path = join(path, key)
		}
		return nodeAt(root, append([]any{"tenants", i}, anys(keys)...)...), path
	}
	if users > MaxUsers {
		n, path := group(0, "load", "users")
		d.fail(n, path, nil, "%.0f closed-model users in all (count × users over the groups) is more than %d; give fewer users, or open-model arrivals at their rate", users, MaxUsers)
	}
	if requests > MaxRequests {
		n, path := group(1, "load")
		d.fail(n, path, nil, "about %.3g requests expected in all (rate × active time × count; closed users over their think and service time) is more than %.0g; shorten the run or lower its load", requests, MaxRequests)
	}
	if rate > MaxRate {
		n, path := group(2, "load")
		d.fail(n, path, nil, "%.3g requests/s in all at the peak (rate × count) is more than %.0g/s", rate, MaxRate)
	}
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// nodeAt returns the node at path in n (mapping keys as strings, list
// indexes as ints, through aliases and merge keys), or the deepest node on
// the way there when the path does not reach so far.
func nodeAt(n *yaml.Node, path ...any) *yaml.Node {
	for _, p := range path {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		var next *yaml.Node
		switch k := p.(type) {
		case int:
			if n.Kind == yaml.SequenceNode && k >= 0 && k < len(n.Content) {
				next = n.Content[k]
			}
		case string:
			next = mapValue(n, k, 0)
		}
		if next == nil {
			return n
		}
		n = next
	}
	return n
}

// mapValue returns the value of key in mapping n, looking through merge
// keys (<<) up to a few levels deep.
func mapValue(n *yaml.Node, key string, depth int) *yaml.Node {
	if n.Kind != yaml.MappingNode || depth > maxMergeNest {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "<<" {
			m := n.Content[i+1]
			for m.Kind == yaml.AliasNode && m.Alias != nil {
				m = m.Alias
			}
			if v := mapValue(m, key, depth+1); v != nil {
				return v
			}
		}
	}
	return nil
}
