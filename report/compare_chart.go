package report

// This file draws a comparison's charts against the swept value: each
// group's p99, ok rate and rejected share per point, as PNG and as
// interactive curves, with the points in the order of the value (off, no
// limit, at the right) and the SLO lines.

import (
	"errors"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"
)

// unlimited reports whether a swept value means no limit: `off`, drawn as
// ∞.
func unlimited(v string) bool { return v == "off" }

// sweepNumber reads the number a swept value starts with ("4", "10r/s",
// "2.5m"), +Inf for no limit; false when it has none.
func sweepNumber(v string) (float64, bool) {
	if unlimited(v) {
		return math.Inf(1), true
	}
	end := 0
	for end < len(v) && (v[end] >= '0' && v[end] <= '9' || v[end] == '.') {
		end++
	}
	f, err := strconv.ParseFloat(v[:end], 64)
	return f, err == nil
}

// valueOrder returns the indexes of points in the order of their swept
// value when the sweep has one axis and every value is a number or `off`:
// ascending, with `off` (∞) at the right, where a limit that is never
// reached belongs. Any other sweep keeps its order.
func valueOrder(axis Names, points []Point) []int {
	idx := make([]int, len(points))
	for i := range idx {
		idx[i] = i
	}
	if len(axis) > 1 {
		return idx
	}
	keys := make([]float64, len(points))
	for i, p := range points {
		if len(p.Value) != 1 {
			return idx
		}
		f, ok := sweepNumber(p.Value[0])
		if !ok {
			return idx
		}
		keys[i] = f
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case keys[a] < keys[b]:
			return -1
		case keys[a] > keys[b]:
			return 1
		}
		return 0
	})
	return idx
}

// chartOrder returns c and its points (which may be nil) in valueOrder.
func chartOrder(c *Comparison, points []*Results) (*Comparison, []*Results) {
	idx := valueOrder(c.Axis, c.Points)
	oc := *c
	oc.Points = make([]Point, len(idx))
	var op []*Results
	if points != nil {
		op = make([]*Results, len(idx))
	}
	for j, i := range idx {
		oc.Points[j] = c.Points[i]
		if points != nil && i < len(points) {
			op[j] = points[i]
		}
	}
	return &oc, op
}

// pointLabel1 is a point's label on a chart's axis: its values, `off` as ∞.
func pointLabel1(p Point) string {
	vs := make([]string, len(p.Value))
	for i, v := range p.Value {
		if unlimited(v) {
			v = "∞ (off)"
		}
		vs[i] = v
	}
	return strings.Join(vs, ", ")
}

// comparisonSLOs returns the SLOs of c's points on metric (one per
// objective, from the first point that has it), as threshold lines in the
// unit of the chart: ms, or percent for rates.
func comparisonSLOs(c *Comparison, series []pointSeries, metric string) []iLine {
	var out []iLine
	seen := map[string]bool{}
	for _, p := range c.Points {
		for _, s := range p.SLO {
			if s.Metric != metric || seen[s.Name] {
				continue
			}
			seen[s.Name] = true
			y := s.Threshold
			if !IsLatencyMetric(metric) {
				y *= 100
			}
			gi := 0
			for i, ps := range series {
				if ps.group == s.Group {
					gi = i
				}
			}
			out = append(out, iLine{Label: "SLO " + s.Name, Y: y, Color: cssColor(gi), group: gi})
		}
	}
	return out
}

// comparisonInteractive returns the comparison's curves: p99, ok rate and
// rejected share per group against the swept value.
func comparisonInteractive(c *Comparison, points []*Results) []iChart {
	if c == nil || len(c.Points) == 0 {
		return nil
	}
	c, points = chartOrder(c, points)
	series := comparisonSeries(c, points)
	axis := strings.Join(c.Axis, " × ")
	if axis == "" {
		axis = "setting"
	}
	cats := make([]string, len(c.Points))
	x := make([]float64, len(c.Points))
	for i, p := range c.Points {
		cats[i], x[i] = pointLabel1(p), float64(i)
	}
	var mark *float64
	markText := ""
	if i := recommendedIndex(c); i >= 0 {
		f := float64(i)
		mark = &f
		markText = "recommended"
		if !c.Recommendation.Passed {
			markText = "closest (no point passes)"
		}
	}
	specs := []struct {
		id, title, ylabel, unit, metric string
		pick                            func(pointSeries) []float64
		scale                           float64
	}{
		{"compare-p99", "p99 latency per group against " + axis, "p99 latency (model time)", "ms", "p99", func(s pointSeries) []float64 { return s.p99 }, 1},
		{"compare-ok", "Ok rate per group against " + axis, "ok (% of requests)", "pct", "ok_rate", func(s pointSeries) []float64 { return s.okRate }, 100},
		{"compare-rejected", "Rejected share per group against " + axis, "rejected (% of requests)", "pct", "rejected_rate", func(s pointSeries) []float64 { return s.rejRate }, 100},
	}
	var out []iChart
	for _, sp := range specs {
		ch := iChart{ID: sp.id, Title: sp.title, X: x, XLabel: axis, XCats: cats, YLabel: sp.ylabel, YUnit: sp.unit,
			Height: 340, Lines: comparisonSLOs(c, series, sp.metric), MarkX: mark, Mark: markText}
		lo, hi := math.Inf(1), math.Inf(-1)
		for gi, s := range series {
			vals := make(nullables, len(x))
			for i, v := range sp.pick(s) {
				vals[i] = v * sp.scale
				if !math.IsNaN(v) {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
			ch.Series = append(ch.Series, iSeries{Label: s.group, Color: cssColor(gi), Values: vals})
		}
		ch.LogY = sp.unit == "ms" && hi/math.Max(lo, 0.001) > 30
		out = append(out, ch)
	}
	return out
}

// pointSeries is one group's figures across the points of a comparison.
type pointSeries struct {
	group                string
	p99, okRate, rejRate []float64 // NaN where the point has no such group or no data
}

// comparisonSeries collects each group's figures per point, groups in the
// order they first appear. A point without groups in c takes them from
// points[i], when given.
func comparisonSeries(c *Comparison, points []*Results) []pointSeries {
	var out []pointSeries
	at := map[string]int{}
	n := len(c.Points)
	for i, p := range c.Points {
		groups := p.Groups
		if len(groups) == 0 && i < len(points) && points[i] != nil {
			groups = points[i].Groups
		}
		for _, g := range groups {
			j, ok := at[g.Name]
			if !ok {
				j = len(out)
				at[g.Name] = j
				s := pointSeries{group: g.Name, p99: make([]float64, n), okRate: make([]float64, n), rejRate: make([]float64, n)}
				for k := 0; k < n; k++ {
					s.p99[k], s.okRate[k], s.rejRate[k] = math.NaN(), math.NaN(), math.NaN()
				}
				out = append(out, s)
			}
			if g.Latency.Count > 0 {
				out[j].p99[i] = g.Latency.P99
			}
			if g.Requests > 0 {
				out[j].okRate[i] = float64(g.OK) / float64(g.Requests)
				out[j].rejRate[i] = float64(g.Rejected) / float64(g.Requests)
			}
		}
	}
	return out
}

// pointLabels are the x-axis labels of a comparison: each point's values.
func pointLabels(c *Comparison) []string {
	out := make([]string, len(c.Points))
	for i, p := range c.Points {
		out[i] = pointLabel1(p)
	}
	return out
}

// recommendedIndex is the index of the recommended point, -1 if none.
func recommendedIndex(c *Comparison) int {
	if len(c.Recommendation.Value) == 0 {
		return -1
	}
	for i, p := range c.Points {
		if slices.Equal(p.Value, c.Recommendation.Value) {
			return i
		}
	}
	return -1
}

// comparisonCharts draws the charts of a comparison against the swept
// value in the formats f: each group's p99 latency, ok rate and rejected
// share. points are the points' results in c's order; they are optional,
// used only where c lacks a point's groups.
func comparisonCharts(c *Comparison, points []*Results, f formats) ([]Chart, error) {
	if c == nil {
		return nil, errors.New("report: charts of a nil comparison")
	}
	c, points = chartOrder(c, points)
	series := comparisonSeries(c, points)
	axis := strings.Join(c.Axis, " × ")
	if axis == "" {
		axis = "setting"
	}
	specs := []struct {
		name, title, ylabel, metric string
		pick                        func(pointSeries) []float64
		pct, logY                   bool
	}{
		{"compare-p99", "p99 latency per group against " + axis, "p99 latency (model time)", "p99", func(s pointSeries) []float64 { return s.p99 }, false, true},
		{"compare-ok", "Ok rate per group against " + axis, "ok (% of requests)", "ok_rate", func(s pointSeries) []float64 { return s.okRate }, true, false},
		{"compare-rejected", "Rejected share per group against " + axis, "rejected (% of requests)", "rejected_rate", func(s pointSeries) []float64 { return s.rejRate }, true, false},
	}
	var charts []Chart
	for _, sp := range specs {
		slos := comparisonSLOs(c, series, sp.metric)
		ch, err := render(sp.name, sp.title, chartWidth, chartHeight, f, func(cv draw.Canvas) {
			drawAgainstPoints(cv, sp.title, axis, c, series, sp.pick, sp.ylabel, sp.pct, sp.logY, slos)
		})
		if err != nil {
			return nil, err
		}
		ch.Caption = "Each group at each setting, in the order of the swept value with off (no limit, ∞) at the right; dotted lines are SLOs, the dashed line marks the recommended point. Hover for values, drag to zoom."
		charts = append(charts, ch)
	}
	return charts, nil
}

// drawAgainstPoints draws one line per group of the figure pick gives,
// against the comparison's points as categories, marking the recommended
// point.
func drawAgainstPoints(c draw.Canvas, title, axis string, cmp *Comparison, series []pointSeries, pick func(pointSeries) []float64, ylabel string, pct, logY bool, slos []iLine) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, v := range pick(s) {
			if !math.IsNaN(v) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if !math.IsInf(lo, 1) {
		for _, l := range slos { // in the data's unit: fractions for rates
			y := l.Y
			if pct {
				y /= 100
			}
			lo, hi = math.Min(lo, y), math.Max(hi, y)
		}
	}
	if len(cmp.Points) == 0 || math.IsInf(lo, 1) {
		drawNoData(c, title, "no point of the comparison has data for this chart")
		return
	}
	p := newPlot(title, "", axis, ylabel)
	p.NominalX(pointLabels(cmp)...)
	scale := 1.0
	if pct {
		scale = 100
		p.Y.Min, p.Y.Max = 0, math.Min(100, math.Max(hi*100*1.1, 1))
		if hi*100 > 80 {
			p.Y.Max = 100
		}
	} else if logY && hi/math.Max(lo, 0.001) > 30 {
		lo = math.Max(lo, 0.001)
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = msLogTicks{}
		p.Y.Min, p.Y.Max = lo/1.5, hi*1.5
	} else {
		p.Y.Min, p.Y.Max = 0, hi*1.15+0.001
		p.Y.Tick.Marker = msLinearTicks
	}
	if i := recommendedIndex(cmp); i >= 0 {
		name := "recommended"
		if !cmp.Recommendation.Passed {
			name = "closest (no point passes)"
		}
		rl := line(plotter.XYs{{X: float64(i), Y: p.Y.Min}, {X: float64(i), Y: p.Y.Max}}, color.Gray{0x60}, 2, true)
		p.Add(rl)
		p.Legend.Add(name, rl)
	}
	p.X.Min, p.X.Max = -0.4, float64(len(cmp.Points))-0.6
	for _, l := range slos {
		y := l.Y
		if logY && !pct {
			y = math.Max(y, p.Y.Min)
		}
		sl := sloLine(plotter.XYs{{X: p.X.Min, Y: y}, {X: p.X.Max, Y: y}}, l.group)
		p.Add(sl)
		p.Legend.Add(l.Label, sl)
	}
	for gi, s := range series {
		vals := pick(s)
		var xys plotter.XYs
		for i, v := range vals {
			if !math.IsNaN(v) {
				xys = append(xys, plotter.XY{X: float64(i), Y: math.Max(v*scale, p.Y.Min)})
			}
		}
		if len(xys) == 0 {
			continue
		}
		col := paletteColor(gi)
		l := line(xys, col, 2.2, false)
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			continue
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: px(5), Shape: draw.CircleGlyph{}}
		p.Add(l, sc)
		p.Legend.Add(s.group, l, sc)
	}
	drawPlot(p, c)
}
