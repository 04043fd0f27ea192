package report

// This file draws latency over time from the interval histograms (p50 and
// p99 per group), and the SLO lines drawn on any chart of an SLO's metric.

import (
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// sloLine draws the SLO threshold lines of group i.
func sloLine(xys plotter.XYs, i int) *plotter.Line {
	l := line(xys, paletteColor(i), 1.6, false)
	l.LineStyle.Dashes = []vg.Length{vg.Points(2), vg.Points(3)}
	return l
}

// addLatencySLOs draws each group's latency SLOs across [x0, x1] of p and
// returns the highest threshold drawn (0 when none).
func addLatencySLOs(p *plot.Plot, r *Results, x0, x1 float64) float64 {
	hi := 0.0
	for i, g := range r.Groups {
		for _, s := range r.SLO {
			if s.Group != g.Name || !IsLatencyMetric(s.Metric) || s.Threshold <= 0 {
				continue
			}
			l := sloLine(plotter.XYs{{X: x0, Y: s.Threshold}, {X: x1, Y: s.Threshold}}, i)
			p.Add(l)
			p.Legend.Add("SLO "+s.Name, l)
			hi = math.Max(hi, s.Threshold)
		}
	}
	return hi
}

// segments splits (xs, ys) at NaNs into runs a line can draw.
func segments(xs []float64, ys []float64) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	for i, y := range ys {
		if math.IsNaN(y) {
			if len(cur) > 0 {
				out = append(out, cur)
				cur = nil
			}
			continue
		}
		cur = append(cur, plotter.XY{X: xs[i], Y: y})
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// drawLatencyTime draws each group's p50 (solid) and p99 (dashed) per series
// bucket, with the groups' latency SLOs.
func drawLatencyTime(c draw.Canvas, title string, r *Results) {
	tl, ok := latencyOverTime(r)
	if !ok {
		drawNoData(c, title, "no interval histograms in the results")
		return
	}
	end := timeEnd(r)
	p := newPlot(title, "ok responses per "+trimFloat(r.Series.Step, 2)+" s bucket, by the moment they ended; p50 solid, p99 dashed", "model time (s)", "latency (model time)")
	lo, hi := math.Max(tl.lo, 0.001), math.Max(tl.hi, 0.002)
	for i, g := range tl.groups {
		for k, vals := range []nullables{tl.p50[i], tl.p99[i]} {
			name := g + " p50"
			if k == 1 {
				name = g + " p99"
			}
			for j, seg := range segments(tl.t, vals) {
				for n := range seg {
					// A bucket of 0 ms answers sits on the axis's floor: a
					// log scale has no 0.
					seg[n].Y = math.Max(seg[n].Y, lo)
				}
				if len(seg) == 1 { // a lone bucket: a short dash
					seg = append(seg, plotter.XY{X: seg[0].X + r.Series.Step, Y: seg[0].Y})
				}
				l := line(seg, paletteColor(i), 1.8, k == 1)
				p.Add(l)
				if j == 0 {
					p.Legend.Add(name, l)
				}
			}
		}
	}
	hi = math.Max(hi, addLatencySLOs(p, r, 0, end))
	if !logMS(p, lo, hi) {
		p.Y.Min, p.Y.Max = 0, hi*1.2
		p.Y.Tick.Marker = msLinearTicks
	}
	p.X.Min, p.X.Max = 0, end
	drawTimePlot(p, c)
}
