package fakebackend

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"stampede/workerpool"
)

// StatsPath is where a Backend answers its Stats as JSON.
const StatsPath = workerpool.ReservedPrefix + "stats"

// RouteStats are one route's counters.
type RouteStats struct {
	Name      string `json:"name"`
	Path      string `json:"path"`
	Arrived   uint64 `json:"arrived"`
	Served    uint64 `json:"served"`
	Killed    uint64 `json:"killed"`
	Refused   uint64 `json:"refused"`
	Cancelled uint64 `json:"cancelled"`
}

// Snapshot is what the stats endpoint answers: the pool's counters, the
// model time since the backend started with the utilization over it, and
// the counters of every route.
type Snapshot struct {
	workerpool.Stats
	Elapsed     time.Duration `json:"elapsed_ns"` // model time since New
	Utilization float64       `json:"utilization"`
	Routes      []RouteStats  `json:"routes"`
}

// Stats returns the pool's counters now, in model time. When Serve leaves
// the backlog to the kernel, Queued is the kernel's accept queue and
// QueueMax the longest Stats and Snapshot have seen it.
func (b *Backend) Stats() workerpool.Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.retire(now)
	return b.withKernel(b.pool.Stats(now))
}

// withKernel adds the kernel's accept queue to s; b.mu is held.
func (b *Backend) withKernel(s workerpool.Stats) workerpool.Stats {
	if b.kernelQueue == nil {
		return s
	}
	if n, ok := b.kernelQueue(); ok {
		b.kernelMax = max(b.kernelMax, n)
		s.Queued += n
	}
	s.QueueMax = max(s.QueueMax, b.kernelMax)
	return s
}

// Snapshot returns the pool's and every route's counters now, routes in the
// order of their paths.
func (b *Backend) Snapshot() Snapshot {
	b.mu.Lock()
	now := b.now()
	b.retire(now)
	s := Snapshot{Stats: b.withKernel(b.pool.Stats(now)), Elapsed: now}
	s.Routes = make([]RouteStats, len(b.routes))
	for i := range b.routes {
		s.Routes[i] = b.routes[i].stats
	}
	b.mu.Unlock()
	s.Utilization = s.Stats.Utilization(s.Elapsed)
	slices.SortFunc(s.Routes, func(x, y RouteStats) int { return strings.Compare(x.Path, y.Path) })
	return s
}

func (b *Backend) serveStats(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := json.MarshalIndent(b.Snapshot(), "", "  ")
	if err != nil { // cannot happen: the snapshot is plain numbers and strings
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(append(body, '\n'))
}
