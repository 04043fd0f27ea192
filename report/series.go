package report

import "stampede/workload"

// This file holds the time series and histogram snapshots that results.json
// carries beside its totals.

// Series are the time series of a run, in model time. Buckets are indexed
// from the start of the run; a result falls in the bucket of the moment it
// ended (intended send time + latency), the moment a server operator sees it.
type Series struct {
	Step    float64         `json:"step_s"`  // width of one bucket, model seconds
	Groups  []GroupSeries   `json:"groups"`  // outcomes per bucket per group
	Backend []BackendSample `json:"backend"` // busy workers and queue length
	Keys    []KeySeries     `json:"keys"`    // in-flight per key, the busiest keys
	Limit   int             `json:"limit"`   // the first limit_conn's per-key limit, 0 if none

	// Hosts are the busiest hosts' requests in flight as their clients
	// saw them, for runs that sampled no limiter keys (limit_req only, or
	// no limit at all); left out otherwise. Beyond the v1 contract.
	Hosts []HostSeries `json:"hosts,omitempty"`
}

// HostSeries is one host's mean number of requests in flight per series
// bucket, from the first bucket on: the time its tenants' sent requests
// (all but dropped arrivals) spent between their intended send and their
// end, divided by the bucket's width. Tenants names the tenants that share
// the host.
type HostSeries struct {
	Host     string    `json:"host"`
	Tenants  []string  `json:"tenants"`
	InFlight []float64 `json:"in_flight"`
}

// GroupSeries is one group's outcome counts per bucket: Counts[b][o] for
// bucket b and workload.Outcome o. Every group has the same number of buckets.
type GroupSeries struct {
	Name   string                         `json:"name"`
	Counts [][workload.NumOutcomes]uint32 `json:"counts"`
}

// BackendSample is the backend's state in one bucket: the most busy workers
// and the longest queue sampled in the bucket starting at T. Buckets without
// a sample are left out.
type BackendSample struct {
	T      float64 `json:"t"` // model seconds from the start
	Busy   int     `json:"busy"`
	Queued int     `json:"queued"`
}

// KeySeries is one limiter key's in-flight count over time: the most
// requests in flight seen in each bucket starting at T[i] in which keys were
// sampled (0 when the key was idle).
type KeySeries struct {
	Key      string    `json:"key"`
	T        []float64 `json:"t"`
	InFlight []int     `json:"in_flight"`
}

// Snapshots are the run's HdrHistograms, encoded, so that shards of one run
// merge exactly (stampede report a.json b.json). Each string is an
// HdrHistogram V2 compressed, base64 encoding (Histogram.Encode with
// V2CompressedEncodingCookieBase) of model-time microseconds.
type Snapshots struct {
	Tenants []string `json:"tenants"` // one per tenant, in the order of Results.Tenants
	Routes  []string `json:"routes"`

	// Intervals are the per-group histograms of each series bucket that
	// holds ok responses, in bucket order then group order: what
	// histograms.hlog is written from.
	Intervals []IntervalSnapshot `json:"intervals,omitempty"`
}

// IntervalSnapshot is one group's latency histogram over one series bucket.
type IntervalSnapshot struct {
	Group string  `json:"group"`
	T     float64 `json:"t"` // bucket start, model seconds
	Hist  string  `json:"h"`

	// stats are Hist's figures once known: when the snapshot was made
	// here, or decoded once by Results.prepare; so that neither the
	// interval log nor the charts decode Hist again.
	stats *intervalStats
}
