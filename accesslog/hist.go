package accesslog

import (
	"math/bits"
	"time"
)

// hist is a histogram of durations in microseconds, exact below 128 µs
// and within 1/128 above, in bounded memory (about 3,500 buckets).
type hist struct {
	n        uint64
	sum      float64
	min, max uint64
	counts   []uint32
}

const histSub = 128

func histIndex(v uint64) int {
	if v < histSub {
		return int(v)
	}
	e := bits.Len64(v) - 8 // v>>e is in [128, 256)
	return histSub + e*histSub + int(v>>e) - histSub
}

// histLow returns the smallest value of bucket i, and its width.
func histLow(i int) (uint64, uint64) {
	if i < histSub {
		return uint64(i), 1
	}
	e := (i - histSub) / histSub
	m := uint64(i-histSub-e*histSub) + histSub
	return m << e, 1 << e
}

func (h *hist) add(us uint64) {
	i := histIndex(us)
	if i >= len(h.counts) {
		h.counts = append(h.counts, make([]uint32, i+1-len(h.counts))...)
	}
	h.counts[i]++
	if h.n == 0 || us < h.min {
		h.min = us
	}
	h.max = max(h.max, us)
	h.n++
	h.sum += float64(us)
}

func (h *hist) merge(o *hist) {
	if o.n == 0 {
		return
	}
	if len(o.counts) > len(h.counts) {
		h.counts = append(h.counts, make([]uint32, len(o.counts)-len(h.counts))...)
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// quantile returns the q-th percentile (0..100) in microseconds,
// interpolated within its bucket; p0 and p100 are the exact extremes.
func (h *hist) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	if q <= 0 {
		return float64(h.min)
	}
	if q >= 100 {
		return float64(h.max)
	}
	rank := q / 100 * float64(h.n)
	acc := 0.0
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		if acc+float64(c) >= rank {
			lo, w := histLow(i)
			v := float64(lo) + (rank-acc)/float64(c)*float64(w)
			return min(max(v, float64(h.min)), float64(h.max))
		}
		acc += float64(c)
	}
	return float64(h.max)
}

// mean returns the mean in microseconds.
func (h *hist) mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

// quantilePoints are the percents an imported empirical table holds.
var quantilePoints = []float64{0, 1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 98, 99, 99.5, 99.9, 100}

// table returns the histogram's quantile table in model time: log time
// divided by scale, rounded to the microsecond (or to 1 ms above 10 s, which
// keeps a file short and loses nothing that matters).
func (h *hist) table(scale float64) ([]float64, []time.Duration) {
	ps := make([]float64, 0, len(quantilePoints))
	vs := make([]time.Duration, 0, len(quantilePoints))
	for _, p := range quantilePoints {
		d := time.Duration(h.quantile(p) / scale * float64(time.Microsecond))
		if d > 10*time.Second {
			d = d.Round(time.Millisecond)
		} else {
			d = d.Round(time.Microsecond)
		}
		if n := len(vs); n > 0 && d < vs[n-1] {
			d = vs[n-1]
		}
		ps = append(ps, p)
		vs = append(vs, d)
	}
	return ps, vs
}
