package report

// This file draws outcomes over time: requests per model second by outcome,
// one stacked panel per busiest group.

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"

	"stampede/workload"
)

// busiestGroups returns the indexes into s.Groups of up to n groups with the
// most requests, busiest first.
func busiestGroups(s *Series, n int) []int {
	type gi struct {
		i     int
		total uint64
	}
	var gs []gi
	for i, g := range s.Groups {
		var t uint64
		for _, b := range g.Counts {
			for _, v := range b {
				t += uint64(v)
			}
		}
		if t > 0 {
			gs = append(gs, gi{i, t})
		}
	}
	slices.SortStableFunc(gs, func(a, b gi) int { return cmp.Compare(b.total, a.total) })
	var out []int
	for _, g := range gs[:min(n, len(gs))] {
		out = append(out, g.i)
	}
	return out
}

func outcomesHeight(r *Results) int {
	if r.Series == nil || r.Series.Step <= 0 {
		return chartHeight
	}
	n := len(busiestGroups(r.Series, maxOutcomePanels))
	return max(chartHeight, n*panelHeight+40)
}

func drawOutcomes(c draw.Canvas, title string, r *Results) {
	s := r.Series
	if s == nil || s.Step <= 0 {
		drawNoData(c, title, "no time series in the results")
		return
	}
	idx := busiestGroups(s, maxOutcomePanels)
	if len(idx) == 0 {
		drawNoData(c, title, "no requests were recorded")
		return
	}
	// Draw the layers any shown group has, in the same order everywhere.
	var used [workload.NumOutcomes]bool
	for _, i := range idx {
		for _, b := range s.Groups[i].Counts {
			for o, v := range b {
				used[o] = used[o] || v > 0
			}
		}
	}
	fillWhite(c)
	tiles := draw.Tiles{Rows: len(idx), Cols: 1, PadY: px(6)}
	for row, i := range idx {
		g := s.Groups[i]
		k := (len(g.Counts) + maxBars - 1) / maxBars // buckets per bar
		nb := (len(g.Counts) + k - 1) / k
		var sub string
		if row == 0 {
			sub = "stacked; requests/s averaged over " + trimFloat(float64(k)*s.Step, 2) + " s of model time"
			if len(idx) < len(s.Groups) {
				sub += fmt.Sprintf("; the %d busiest of %d groups", len(idx), len(s.Groups))
			}
		}
		p := newPlot(title+": "+g.Name, sub, "model time (s)", "requests/s")
		lower := make([]float64, nb)
		for o := workload.Outcome(0); o < workload.NumOutcomes; o++ {
			if !used[o] {
				continue
			}
			upper := make([]float64, nb)
			for bar := range upper {
				lo, hi := bar*k, min((bar+1)*k, len(g.Counts))
				var sum float64
				for _, cnt := range g.Counts[lo:hi] {
					sum += float64(cnt[o])
				}
				upper[bar] = lower[bar] + sum/(float64(hi-lo)*s.Step)
			}
			poly, err := plotter.NewPolygon(stackRing(lower, upper, float64(k)*s.Step, float64(len(g.Counts))*s.Step))
			if err == nil {
				poly.Color = outcomeColors[o]
				poly.LineStyle.Width = 0
				p.Add(poly)
				p.Legend.Add(outcomeLabels[o], poly)
			}
			lower = upper
		}
		hi := 0.0
		for _, v := range lower {
			hi = math.Max(hi, v)
		}
		p.X.Min, p.X.Max = 0, timeEnd(r) // the time axis every chart shares
		p.Y.Min, p.Y.Max = 0, math.Max(hi*1.1, 1)
		if row < len(idx)-1 {
			p.X.Label.Text = ""
		}
		drawTimePlot(p, tiles.At(c, 0, row))
	}
}

// stackRing is the outline of one stacked layer: the upper edge as steps of
// width w left to right (the last ending at end), then the lower edge right
// to left.
func stackRing(lower, upper []float64, w, end float64) plotter.XYs {
	n := len(upper)
	x := func(b int) float64 { return math.Min(float64(b)*w, end) }
	ring := make(plotter.XYs, 0, 4*n)
	for b := 0; b < n; b++ {
		ring = append(ring, plotter.XY{X: x(b), Y: upper[b]}, plotter.XY{X: x(b + 1), Y: upper[b]})
	}
	for b := n - 1; b >= 0; b-- {
		ring = append(ring, plotter.XY{X: x(b + 1), Y: lower[b]}, plotter.XY{X: x(b), Y: lower[b]})
	}
	return ring
}

// window is one window of a downsampled series.
type window struct {
	t0, t1    float64
	mean, max float64
}

// downsample splits [t0, t1] into n windows and returns each window's time
// average and maximum of the step function (ts[i], vs[i]) (a value holds
// until the next sample). Windows before the first sample are skipped.
func downsample(ts, vs []float64, t0, t1 float64, n int) []window {
	out := make([]window, 0, n)
	w := (t1 - t0) / float64(n)
	j := 0
	for i := 0; i < n; i++ {
		a, b := t0+float64(i)*w, t0+float64(i+1)*w
		for j+1 < len(ts) && ts[j+1] <= a {
			j++
		}
		if ts[j] > a && j == 0 && ts[0] >= b {
			continue
		}
		win := window{t0: a, t1: b}
		var area float64
		for k := j; k < len(ts) && ts[k] < b; k++ {
			from := math.Max(a, ts[k])
			to := b
			if k+1 < len(ts) {
				to = math.Min(b, ts[k+1])
			}
			if to > from {
				area += vs[k] * (to - from)
			}
			win.max = math.Max(win.max, vs[k])
		}
		win.mean = area / w
		out = append(out, win)
	}
	return out
}

// stepSeries draws the step function (ts, vs) on p: as is when it is short;
// else its window maxima, as a line or, if means, as a light area under a
// line of its window averages. It returns the largest value drawn.
func stepSeries(p *plot.Plot, ts, vs []float64, t1 float64, col color.RGBA, name string, means bool) float64 {
	light := color.NRGBA{col.R, col.G, col.B, 0x50}
	peak := 0.0
	for _, v := range vs {
		peak = math.Max(peak, v)
	}
	if len(ts) <= 2*maxBars {
		xys := make(plotter.XYs, len(ts)+1)
		for i := range ts {
			xys[i] = plotter.XY{X: ts[i], Y: vs[i]}
		}
		xys[len(ts)] = plotter.XY{X: math.Max(t1, ts[len(ts)-1]), Y: vs[len(vs)-1]}
		l := line(xys, col, 2, false)
		l.StepStyle = plotter.PostStep
		if means {
			l.FillColor = light
		}
		p.Add(l)
		p.Legend.Add(name, l)
		return peak
	}
	wins := downsample(ts, vs, ts[0], math.Max(t1, ts[len(ts)-1]), maxBars)
	maxXY := make(plotter.XYs, 0, 2*len(wins))
	meanXY := make(plotter.XYs, 0, 2*len(wins))
	for _, w := range wins {
		maxXY = append(maxXY, plotter.XY{X: w.t0, Y: w.max}, plotter.XY{X: w.t1, Y: w.max})
		meanXY = append(meanXY, plotter.XY{X: w.t0, Y: w.mean}, plotter.XY{X: w.t1, Y: w.mean})
	}
	width := trimFloat(wins[0].t1-wins[0].t0, 1)
	if !means {
		l := line(maxXY, col, 1.6, false)
		p.Add(l)
		p.Legend.Add(name, l)
		return peak
	}
	area := line(maxXY, light, 0, false)
	area.FillColor = light
	mean := line(meanXY, col, 2, false)
	p.Add(area, mean)
	p.Legend.Add(name+" (max per "+width+" s)", area)
	p.Legend.Add(name+" (mean per "+width+" s)", mean)
	return peak
}

// maxBars is the most bars or windows a time series is drawn with; longer
// series are averaged (or, for in-flight counts, maximised) over windows.
const maxBars = 240
