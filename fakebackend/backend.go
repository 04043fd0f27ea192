package fakebackend

import (
	"net/http"
)

// This file fixes the live backend's API. Bodies marked "unimplemented" are
// to be filled in.

// Route is a path prefix and its service time; the longest matching prefix
// wins.
type Route struct {
	Name    string
	Path    string
	Service Dist
}

// Options configure New.
type Options struct {
	Pool   Config
	Routes []Route // empty: every path takes no time
	// TimeScale multiplies every duration (service times and the worker
	// timeout): 0.01 plays the model 100× faster. Zero means 1.
	TimeScale float64
	Seed      uint64 // seeds the service-time draws
}

// StatsPath is where a Backend answers its Stats as JSON.
const StatsPath = "/_stampede/stats"

// Backend is the live fake backend: an http.Handler over a Pool, where work
// is waiting on timers, never spinning. It is safe for concurrent use.
type Backend struct{}

// New validates opts and returns a backend with every worker idle.
func New(opts Options) (*Backend, error) { panic("unimplemented") }

// ServeHTTP serves one request as a sync worker would.
func (b *Backend) ServeHTTP(w http.ResponseWriter, r *http.Request) { panic("unimplemented") }

// Stats returns the pool's counters now.
func (b *Backend) Stats() Stats { panic("unimplemented") }
