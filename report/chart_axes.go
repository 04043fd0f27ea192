package report

// This file holds the axis tick markers the charts share: log-scale
// milliseconds and round linear steps.

import (
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
)

// msLogTicks marks a log axis of milliseconds at readable durations
// ("500 ms", "2 s", "1 min"): 1-2-5 steps over a narrow range, about one
// tick a decade over a wide one.
type msLogTicks struct{}

// Ticks implements plot.Ticker.
func (msLogTicks) Ticks(lo, hi float64) []plot.Tick {
	type cand struct {
		ms    float64
		major bool
	}
	var cands []cand
	for e := -3.0; e < 3; e++ { // 0.001 ms … 500 ms
		for _, m := range []float64{1, 2, 5} {
			cands = append(cands, cand{m * math.Pow(10, e), m == 1})
		}
	}
	for _, d := range durationSteps {
		cands = append(cands, cand{d.ms, d.major})
	}
	var in []cand
	for _, c := range cands {
		if c.ms >= lo*(1-1e-9) && c.ms <= hi*(1+1e-9) {
			in = append(in, c)
		}
	}
	if len(in) > 10 {
		var kept []cand
		for _, c := range in {
			if c.major {
				kept = append(kept, c)
			}
		}
		if len(kept) < 4 { // too sparse: every other candidate instead
			kept = kept[:0]
			for i := len(in) - 1; i >= 0; i -= 2 {
				kept = append([]cand{in[i]}, kept...)
			}
		}
		in = kept
	}
	ticks := make([]plot.Tick, len(in))
	for i, c := range in {
		ticks[i] = plot.Tick{Value: c.ms, Label: formatMs(c.ms)}
	}
	return ticks
}

// niceTicks marks a linear axis at about eight round values (1, 2, 2.5 or 5
// times a power of ten), labelled without needless decimals.
type niceTicks struct{}

// Ticks implements plot.Ticker.
func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return []plot.Tick{{Value: lo, Label: trimFloat(lo, 2)}}
	}
	raw := (hi - lo) / 8
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	prec := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	if math.Abs(step/math.Pow(10, -float64(prec))-math.Round(step/math.Pow(10, -float64(prec)))) > 1e-9 {
		prec++ // 2.5 × 10^k
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step-1e-9) * step; v <= hi+step*1e-9; v += step {
		ticks = append(ticks, plot.Tick{Value: v, Label: trimFloat(v, prec)})
	}
	return ticks
}

// trimFloat formats v with at most prec decimals and no trailing zeros.
func trimFloat(v float64, prec int) string {
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// durationSteps are the candidate ticks in ms beyond 1-2-5 ms steps, with
// whether each is one of the "decade" ticks kept over a wide range.
var durationSteps = []struct {
	ms    float64
	major bool
}{
	{1000, true}, {2000, false}, {5000, false}, {10_000, true}, {20_000, false}, {30_000, false},
	{60_000, true}, {120_000, false}, {300_000, false}, {600_000, true}, {1_200_000, false},
	{1_800_000, false}, {3_600_000, true}, {7_200_000, false}, {18_000_000, false}, {36_000_000, true},
}

// msLinearTicks are niceTicks labelled as latencies.
var msLinearTicks = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
	ticks := niceTicks{}.Ticks(lo, hi)
	for i := range ticks {
		ticks[i].Label = formatMs(ticks[i].Value)
	}
	return ticks
})

// logMS puts p's y axis on a log scale of ms around lo..hi when they span
// more than 30×, and reports whether it did.
func logMS(p *plot.Plot, lo, hi float64) bool {
	if hi/lo <= 30 {
		return false
	}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = msLogTicks{}
	p.Y.Min, p.Y.Max = lo/1.3, hi*1.6
	return true
}
