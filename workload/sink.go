package workload

import "time"

// A Sink receives results. Engines call Add from one goroutine at a time
// unless the sink says otherwise.
type Sink interface {
	Add(*Result)
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(*Result)

// Add calls f(r).
func (f SinkFunc) Add(r *Result) { f(r) }

// Sampler receives the state of the backend and of the busiest limiter keys
// over model time. report.Recorder is one.
type Sampler interface {
	SampleBackend(at time.Duration, busy, queued int)
	SampleKeys(at time.Duration, inflight map[string]int)
}

// SamplerOf returns the sampler an engine samples into: s, or when s is
// nil the sink when it is a Sampler, else nil (no sampling).
func SamplerOf(s Sampler, sink Sink) Sampler {
	if s != nil {
		return s
	}
	s, _ = sink.(Sampler)
	return s
}
