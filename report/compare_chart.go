package report

// This file orders a comparison's points for its charts, and builds the
// comparison's interactive curves and SLO lines.

import (
	"math"
	"slices"
	"strconv"
	"strings"
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
