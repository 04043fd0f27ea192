package report

// This file holds the sampled series: the backend's busy workers and queue,
// and the in-flight count of the busiest limiter keys.

import (
	"sort"
	"time"
)

// Key tracking bounds: the recorder follows at most maxKeyCandidates keys at
// a time (evicting the one with the lowest peak when a busier key appears)
// and reports the KeepKeys busiest.
const (
	maxKeyCandidates = 64
	KeepKeys         = 10
)

type backendBucket struct {
	busy, queued int
	set          bool
}

type keyRec struct {
	key      string
	peak     int
	sum      int64   // of per-bucket maxima, to break ties between equal peaks
	inflight []int32 // per bucket, the most in flight seen
}

// SampleBackend records the backend's busy workers and queue length at model
// time at. The series keeps the largest of each per bucket.
func (r *Recorder) SampleBackend(at time.Duration, busy, queued int) {
	r.sampleBackend(r.bucket(at), busy, queued)
}

func (r *Recorder) sampleBackend(b, busy, queued int) {
	for len(r.backend) <= b {
		r.backend = append(r.backend, backendBucket{})
	}
	s := &r.backend[b]
	s.set = true
	s.busy = max(s.busy, busy)
	s.queued = max(s.queued, queued)
}

func (r *Recorder) markKeysSampled(b int) {
	for len(r.keySampled) <= b {
		r.keySampled = append(r.keySampled, false)
	}
	r.keySampled[b] = true
}

func (k *keyRec) note(b, n int) {
	for len(k.inflight) <= b {
		k.inflight = append(k.inflight, 0)
	}
	if int32(n) > k.inflight[b] {
		k.sum += int64(n) - int64(k.inflight[b])
		k.inflight[b] = int32(n)
	}
	k.peak = max(k.peak, n)
}

// busier reports whether a ranks before b among keys: higher peak, then more
// in-flight over time, then by name.
func busier(a, b *keyRec) bool {
	if a.peak != b.peak {
		return a.peak > b.peak
	}
	if a.sum != b.sum {
		return a.sum > b.sum
	}
	return a.key < b.key
}

// SampleKeys records the in-flight count of limiter keys at model time at.
// The recorder keeps the busiest keys only; counts of keys it does not keep
// are discarded. A key missing from inflight had nothing in flight.
func (r *Recorder) SampleKeys(at time.Duration, inflight map[string]int) {
	b := r.bucket(at)
	r.markKeysSampled(b)
	if len(inflight) == 0 {
		return
	}
	// Visit keys in order so that which keys are kept does not depend on
	// map iteration.
	for _, k := range sortedKeys(inflight) {
		n := inflight[k]
		if n <= 0 {
			continue
		}
		kr := r.keys[k]
		if kr == nil {
			if len(r.keys) >= maxKeyCandidates {
				// No key followed peaked below lowPeak, so none gives way
				// to this one: the scan for the lowest is skipped, which
				// with the keys of a fleet in flight by ones and twos was
				// most samples' work.
				if n <= r.lowPeak {
					continue
				}
				low := r.lowestKey()
				r.lowPeak = low.peak
				if low.peak >= n {
					continue
				}
				delete(r.keys, low.key)
			}
			kr = &keyRec{key: k}
			r.keys[k] = kr
			r.lowPeak = min(r.lowPeak, n)
		}
		kr.note(b, n)
	}
}

// lowestKey returns the least busy key followed.
func (r *Recorder) lowestKey() *keyRec {
	var low *keyRec
	for _, k := range r.keys {
		if low == nil || busier(low, k) {
			low = k
		}
	}
	return low
}

// rankedKeys returns the keys followed, busiest first.
func (r *Recorder) rankedKeys() []*keyRec {
	ks := make([]*keyRec, 0, len(r.keys))
	for _, k := range r.keys {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return busier(ks[i], ks[j]) })
	return ks
}

func (r *Recorder) pruneKeys(n int) {
	ks := r.rankedKeys()
	for _, k := range ks[min(n, len(ks)):] {
		delete(r.keys, k.key)
	}
}
