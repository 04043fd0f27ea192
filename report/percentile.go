package report

import (
	"math"
	"math/bits"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// This file holds the one percentile rule every figure of a report uses:
// results.json, the summary, the report's tables and charts.

// referenceRank returns how many of n recorded values a walk from the lowest
// must pass to reach percentile p, by the rule of HdrHistogram's reference
// implementation (Java AbstractHistogram.getValueAtPercentile, which
// hdr-histogram-js follows): p is lowered by one ulp so that a rounding error
// cannot push it into the next bucket, p·n/100 is rounded up, and the rank is
// at least 1. hdrhistogram-go rounds p·n/100 to the nearest integer instead,
// which puts the p99.9 of 1700 values one value lower than the reference
// libraries read from the same interval log.
func referenceRank(p float64, n int64) int64 {
	p = math.Min(math.Max(math.Nextafter(p, math.Inf(-1)), 0), 100)
	return max(int64(math.Ceil(p*float64(n)/100)), 1)
}

// valueAtPercentile returns the value at percentile p (0..100) of h as the
// reference HdrHistogram libraries compute it: the highest value equivalent
// to the bucket in which the walk reaches referenceRank (the lowest for
// p = 0). An empty histogram gives 0. A histogram of another geometry than
// the recorder's is answered by the library.
func valueAtPercentile(h *hdr.PackedHistogram, p float64) int64 {
	n := h.TotalCount()
	if n == 0 {
		return 0
	}
	if h.LowestTrackableValue() != histLowest || h.SignificantFigures() != histDigits {
		return h.ValueAtPercentile(p)
	}
	rank := referenceRank(p, n)
	var seen, at int64
	h.ForEachBucket(func(v, c int64) bool {
		seen += c
		at = v
		return seen < rank
	})
	lo, size := equivalentRange(at)
	if p == 0 {
		return lo
	}
	return lo + size - 1
}

// equivalentRange returns the lowest value and the width of the range of
// values the recorder's histograms (lowest 1, 3 significant digits: 2048
// sub-buckets, unit magnitude 0) count as equal to v.
func equivalentRange(v int64) (lowest, size int64) {
	b := uint(64-bits.LeadingZeros64(uint64(v)|subBucketMask)) - (subBucketHalfMag + 1)
	return v >> b << b, 1 << b
}

// packed returns h's counts as a sparse histogram of the recorder's
// geometry, so that dense histograms are read by the same rule.
func packed(h *hdr.Histogram) *hdr.PackedHistogram {
	p := newHist()
	p.MergeFrom(h)
	return p
}
