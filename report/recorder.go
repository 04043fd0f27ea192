package report

import (
	"time"

	"stampede/fakebackend"
	"stampede/loadgen"
	"stampede/scenarios"
)

// This file fixes the recording API the engines call. Bodies marked
// "unimplemented" are to be filled in.

// Series are the time series of a run, in model time.
type Series struct {
	Step    float64         `json:"step_s"`  // width of one bucket, model seconds
	Groups  []GroupSeries   `json:"groups"`  // outcomes per bucket per group
	Backend []BackendSample `json:"backend"` // busy workers and queue length
	Keys    []KeySeries     `json:"keys"`    // in-flight per key, the busiest keys
	Limit   int             `json:"limit"`   // the first limit_conn's per-key limit, 0 if none
}

// GroupSeries is one group's outcome counts per bucket: Counts[b][o] for
// bucket b and loadgen.Outcome o.
type GroupSeries struct {
	Name   string                        `json:"name"`
	Counts [][loadgen.NumOutcomes]uint32 `json:"counts"`
}

// BackendSample is the backend's state at one instant.
type BackendSample struct {
	T      float64 `json:"t"` // model seconds from the start
	Busy   int     `json:"busy"`
	Queued int     `json:"queued"`
}

// KeySeries is one limiter key's in-flight count over time.
type KeySeries struct {
	Key      string    `json:"key"`
	T        []float64 `json:"t"`
	InFlight []int     `json:"in_flight"`
}

// Snapshots are the run's HdrHistograms, encoded, so that shards of one run
// merge exactly (stampede report a.json b.json).
type Snapshots struct {
	Tenants []string `json:"tenants"` // one per tenant, in the order of Results.Tenants
	Routes  []string `json:"routes"`
}

// RunInfo is what the engine knows at the end of a run.
type RunInfo struct {
	Engine      string // "live" or "sim"
	Wall        time.Duration
	Interrupted bool
	Backend     fakebackend.Stats // the pool's counters at the end
	Version     string
	CommandLine string
}

// Recorder records one run: HdrHistograms per tenant, group and route, and
// the time series. It is not safe for concurrent use: an engine either feeds
// it from one goroutine or keeps one per goroutine and merges them.
type Recorder struct{}

// NewRecorder returns a recorder for sc's tenants and routes.
func NewRecorder(sc *scenarios.Scenario) *Recorder { panic("unimplemented") }

// Add records one result.
func (r *Recorder) Add(res *loadgen.Result) { panic("unimplemented") }

// Merge adds o's records to r. Both must be for the same scenario.
func (r *Recorder) Merge(o *Recorder) { panic("unimplemented") }

// SampleBackend records the backend's busy workers and queue length at model
// time at.
func (r *Recorder) SampleBackend(at time.Duration, busy, queued int) { panic("unimplemented") }

// SampleKeys records the in-flight count of limiter keys at model time at.
// The recorder keeps the busiest keys only; counts of keys it does not keep
// are discarded.
func (r *Recorder) SampleKeys(at time.Duration, inflight map[string]int) { panic("unimplemented") }

// Results builds results.json from what was recorded, evaluating the
// scenario's SLOs.
func (r *Recorder) Results(info RunInfo) *Results { panic("unimplemented") }

var _ loadgen.Sink = (*Recorder)(nil)
