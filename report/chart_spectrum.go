package report

// This file draws the latency percentile spectrum: each group's ok-response
// latency against 1/(1−p), from the merged HdrHistograms of its tenants.

import (
	"fmt"
	"math"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"
)

// spectrumTicks are the percentiles marked on the spectrum's x axis.
var spectrumTicks = []struct {
	x     float64 // 1/(1−p)
	label string
}{{2, "50%"}, {10, "90%"}, {100, "99%"}, {1000, "99.9%"}, {10000, "99.99%"}}

// spectrumPoint is one point of a latency spectrum: x = 1/(1−p).
type spectrumPoint struct{ x, ms float64 }

// groupSpectrum returns a group's latency spectrum: from the merged HdrHistograms
// of its tenants when r carries them, else from the latency summary.
func groupSpectrum(r *Results, g GroupResult, hists map[string]quantiler) []spectrumPoint {
	if q, ok := hists[g.Name]; ok && q.count() > 0 {
		return histSpectrum(q)
	}
	return summarySpectrum(g.Latency)
}

// quantiler is what the spectrum needs of a histogram: its count and the
// value in ms at a quantile 0..1.
type quantiler interface {
	count() uint64
	quantileMS(q float64) float64
}

// histSpectrum samples q at ten points per decade of 1/(1−p), from the
// median to the last percentile the sample count supports, then the max.
func histSpectrum(q quantiler) []spectrumPoint {
	n := float64(q.count())
	last := math.Min(1e4, math.Max(2, n))
	var pts []spectrumPoint
	for k := 3; ; k++ { // 10^(k/10) from 2 up
		x := math.Pow(10, float64(k)/10)
		if x > last*1.0001 {
			break
		}
		p := 1 - 1/x
		pts = append(pts, spectrumPoint{x, q.quantileMS(p)})
	}
	if len(pts) == 0 || pts[len(pts)-1].x < last {
		pts = append(pts, spectrumPoint{last, q.quantileMS(1)})
	}
	return pts
}

// summarySpectrum is the spectrum from the summary percentiles only, the
// fallback when no histogram came with the results. The max is put at the
// rank of the last sample (1/(1−p) = count), capped at 99.99%.
func summarySpectrum(l Latency) []spectrumPoint {
	if l.Count == 0 {
		return nil
	}
	pts := []spectrumPoint{{2, l.P50}, {10, l.P90}, {20, l.P95}, {100, l.P99}, {1000, l.P999}}
	last := math.Min(1e4, math.Max(2, float64(l.Count)))
	out := pts[:0]
	for _, p := range pts {
		if p.x < last {
			out = append(out, p)
		}
	}
	return append(out, spectrumPoint{last, l.Max})
}

func drawSpectrum(c draw.Canvas, title string, r *Results) {
	hists := groupQuantilers(r)
	type series struct {
		name string
		pts  []spectrumPoint
	}
	var all []series
	lo, hi := math.Inf(1), math.Inf(-1)
	fromHist := false
	for _, g := range r.Groups {
		pts := groupSpectrum(r, g, hists)
		if _, ok := hists[g.Name]; ok {
			fromHist = true
		}
		if len(pts) == 0 {
			continue
		}
		all = append(all, series{g.Name, pts})
		for _, p := range pts {
			lo, hi = math.Min(lo, p.ms), math.Max(hi, p.ms)
		}
	}
	if len(all) == 0 {
		drawNoData(c, title, "no ok responses were recorded")
		return
	}
	sub := "ok responses only, model time"
	if t := r.Totals; t.Requests > t.OK {
		sub += "; leaves out the " + fmtPct(share(t.Requests-t.OK, t.Requests)) + " of requests that did not end ok"
	}
	if !fromHist {
		sub += "; from the summary percentiles (no histograms in the results)"
	}
	p := newPlot(title, sub, "percentile (log scale of 1/(1−p))", "latency (model time)")
	p.X.Scale = plot.LogScale{}
	p.X.Min, p.X.Max = 1.8, 1e4*1.15
	var ticks []plot.Tick
	for _, t := range spectrumTicks {
		ticks = append(ticks, plot.Tick{Value: t.x, Label: t.label})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	lo = math.Max(lo, 0.001)
	hi = math.Max(hi, lo*1.5)
	hi = math.Max(hi, addLatencySLOs(p, r, p.X.Min, p.X.Max))
	if !logMS(p, lo, hi) {
		p.Y.Min, p.Y.Max = 0, hi*1.25
	}
	for i, s := range all {
		xys := make(plotter.XYs, len(s.pts))
		for j, pt := range s.pts {
			xys[j] = plotter.XY{X: pt.x, Y: math.Max(pt.ms, lo)}
		}
		l := line(xys, paletteColor(i), 2.2, false)
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	drawPlot(p, c)
}

// groupQuantilers returns each group's latency histogram, the merge of its
// tenants', by group name. A group some of whose tenants' histograms are
// missing or unreadable is left out, so that its spectrum falls back to the
// summary rather than showing part of the group.
func groupQuantilers(r *Results) map[string]quantiler {
	g := r.groupHistograms()
	if g == nil {
		return nil
	}
	out := make(map[string]quantiler, len(g.names))
	for _, name := range g.names {
		if h := g.of(name); h != nil {
			out[name] = hdrQuantiler{h}
		}
	}
	return out
}

// hdrQuantiler reads a histogram of model-time microseconds in ms.
type hdrQuantiler struct{ h *hdr.PackedHistogram }

func (q hdrQuantiler) count() uint64 { return uint64(q.h.TotalCount()) }

func (q hdrQuantiler) quantileMS(p float64) float64 {
	if p >= 1 {
		return float64(q.h.Max()) / 1000
	}
	return float64(valueAtPercentile(q.h, 100*p)) / 1000
}

// spectrumCaption says what the spectrum leaves out.
func spectrumCaption(r *Results) string {
	t := r.Totals
	if t.Requests == 0 || t.OK == t.Requests {
		return "Latency of ok responses at each percentile, in model time; every request ended ok."
	}
	return fmt.Sprintf("Latency of ok responses at each percentile, in model time. It leaves out the %s of requests that did not end ok; the outcome shares below show them.",
		fmtPct(share(t.Requests-t.OK, t.Requests)))
}
