package report

// This file builds the data of the report's interactive charts: latency
// over time, outcomes over time and a comparison's curves. The page draws
// them with uPlot (assets/uPlot.iife.min.js, v1.6.32, MIT licence, by Leon
// Sorokin: github.com/leeoniya/uPlot), inlined with assets/charts.js, so
// that the report stays one file that works offline. uPlot was chosen for
// being small (51 KB minified, no dependencies), fast on thousands of
// points, and having hover values, drag-to-zoom and cursor sync between
// charts built in; it is actively maintained.

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"strconv"

	"stampede/workload"
)

var (
	//go:embed assets/uPlot.iife.min.js
	uplotJS string
	//go:embed assets/uPlot.min.css
	uplotCSS string
	//go:embed assets/charts.js
	chartsJS string
)

// iChart is one interactive chart as assets/charts.js reads it.
type iChart struct {
	ID     string    `json:"id"`
	Title  string    `json:"title"`
	Note   string    `json:"note,omitempty"` // a line under the chart
	Sync   string    `json:"sync,omitempty"` // charts of one key share cursor and zoom
	X      []float64 `json:"x"`
	XLabel string    `json:"xlabel"`
	XCats  []string  `json:"xcats,omitempty"` // labels of x = 0, 1, …: a categorical axis
	XMax   float64   `json:"xmax,omitempty"`  // the right end of a time axis
	YLabel string    `json:"ylabel"`
	YUnit  string    `json:"yunit"` // "ms", "pct" (values 0..100) or "" (plain numbers)
	LogY   bool      `json:"logy,omitempty"`
	Height int       `json:"height"`
	Series []iSeries `json:"series"`
	Lines  []iLine   `json:"lines,omitempty"`
	MarkX  *float64  `json:"markx,omitempty"` // a vertical marker: the recommended point
	Mark   string    `json:"mark,omitempty"`
}

// iSeries is one line of an iChart.
type iSeries struct {
	Label  string    `json:"label"`
	Color  string    `json:"color"`
	Dash   bool      `json:"dash,omitempty"`
	Fill   bool      `json:"fill,omitempty"`
	Values nullables `json:"values"`
}

// iLine is a horizontal threshold line: an SLO.
type iLine struct {
	Label string  `json:"label"`
	Y     float64 `json:"y"`
	Color string  `json:"color"`
	group int     // the palette index of its group, for the PNG charts
}

// nullables are values of which NaN means none: JSON null.
type nullables []float64

// MarshalJSON writes NaN as null and the rest with at most 3 decimals.
func (n nullables) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 8*len(n)+2)
	b = append(b, '[')
	for i, v := range n {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, round(v, 3), 'f', -1, 64)
	}
	return append(b, ']'), nil
}

func cssColor(i int) string {
	c := paletteColor(i)
	return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)
}

func outcomeCSS(o workload.Outcome) string {
	c := outcomeColors[o]
	return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)
}

// timeEnd is the right end of every time axis of r's report, model
// seconds: the run's model duration, or the end of its series, backend
// samples or key samples if later (requests draining after the load).
func timeEnd(r *Results) float64 {
	end := r.ModelDurationS
	if s := r.Series; s != nil {
		if len(s.Groups) > 0 {
			end = math.Max(end, float64(len(s.Groups[0].Counts))*s.Step)
		}
		if n := len(s.Backend); n > 0 {
			end = math.Max(end, s.Backend[n-1].T+s.Step)
		}
		for _, k := range s.Keys {
			if n := len(k.T); n > 0 {
				end = math.Max(end, k.T[n-1]+s.Step)
			}
		}
	}
	return math.Max(end, 1)
}

// padTo extends a time chart's x values to end with no values there, so
// that its whole range, and the range a double-click goes back to, is the
// time axis every chart of the report shares.
func padTo(ch *iChart, end float64) {
	if n := len(ch.X); n > 0 && ch.X[n-1] >= end {
		return
	}
	ch.X = append(ch.X, end)
	for i := range ch.Series {
		ch.Series[i].Values = append(ch.Series[i].Values, math.NaN())
	}
}

// latencySLOs returns group's latency SLOs as threshold lines in ms.
func latencySLOs(r *Results, group string, color string) []iLine {
	var out []iLine
	for _, s := range r.SLO {
		if s.Group != group || !IsLatencyMetric(s.Metric) {
			continue
		}
		out = append(out, iLine{Label: "SLO " + s.Name, Y: s.Threshold, Color: color})
	}
	return out
}

// runInteractive returns the interactive charts of r.
func runInteractive(r *Results) []iChart {
	var out []iChart
	if ch, ok := latencyOverTime(r); ok {
		out = append(out, iChart{
			ID: "latency-time", Title: "Latency over time per group: p50 (solid) and p99 (dashed)", Sync: "time",
			X: ch.t, XLabel: "model time (s)", XMax: timeEnd(r), YLabel: "latency (model time)", YUnit: "ms",
			LogY: ch.logY(), Height: 380, Series: ch.iSeries(), Lines: ch.slos,
			Note: "Each point is one " + trimFloat(r.Series.Step, 2) + " s bucket's ok responses, by the moment they ended; dashed horizontal lines are SLOs.",
		})
	}
	if s := r.Series; s != nil && s.Step > 0 {
		for _, gi := range busiestGroups(s, maxOutcomePanels) {
			g := s.Groups[gi]
			t := make([]float64, len(g.Counts))
			for b := range t {
				t[b] = float64(b) * s.Step
			}
			ch := iChart{
				ID: "outcomes-" + strconv.Itoa(gi), Title: "Outcomes over time: " + g.Name, Sync: "time",
				X: t, XLabel: "model time (s)", XMax: timeEnd(r), YLabel: "requests/s", Height: 260,
			}
			for o := workload.Outcome(0); o < workload.NumOutcomes; o++ {
				vals := make(nullables, len(g.Counts))
				any := false
				for b, c := range g.Counts {
					vals[b] = float64(c[o]) / s.Step
					any = any || c[o] > 0
				}
				if any {
					ch.Series = append(ch.Series, iSeries{Label: outcomeLabels[o], Color: outcomeCSS(o), Fill: o == workload.OK, Values: vals})
				}
			}
			out = append(out, ch)
		}
	}
	for i := range out {
		padTo(&out[i], timeEnd(r))
	}
	return out
}

// timeLatency is each group's p50 and p99 per series bucket.
type timeLatency struct {
	t      []float64
	groups []string
	p50    []nullables
	p99    []nullables
	slos   []iLine
	lo, hi float64
}

func (tl *timeLatency) logY() bool { return tl.hi/math.Max(tl.lo, 0.001) > 30 }

func (tl *timeLatency) iSeries() []iSeries {
	var out []iSeries
	for i, g := range tl.groups {
		out = append(out,
			iSeries{Label: g + " p50", Color: cssColor(i), Values: tl.p50[i]},
			iSeries{Label: g + " p99", Color: cssColor(i), Dash: true, Values: tl.p99[i]})
	}
	return out
}

// latencyOverTime reads each group's p50 and p99 per bucket from r's
// interval histograms (what histograms.hlog holds), by the reference rank
// rule. It reports false when r has no intervals.
func latencyOverTime(r *Results) (*timeLatency, bool) {
	if r.Series == nil || r.Series.Step <= 0 || r.Histograms == nil || len(r.Histograms.Intervals) == 0 {
		return nil, false
	}
	n := 0
	if len(r.Series.Groups) > 0 {
		n = len(r.Series.Groups[0].Counts)
	}
	tl := &timeLatency{lo: math.Inf(1), hi: math.Inf(-1)}
	at := map[string]int{}
	for i, g := range r.Groups {
		at[g.Name] = i
		tl.groups = append(tl.groups, g.Name)
		p50, p99 := make(nullables, n), make(nullables, n)
		for b := range p50 {
			p50[b], p99[b] = math.NaN(), math.NaN()
		}
		tl.p50, tl.p99 = append(tl.p50, p50), append(tl.p99, p99)
		tl.slos = append(tl.slos, latencySLOs(r, g.Name, cssColor(i))...)
	}
	tl.t = make([]float64, n)
	for b := range tl.t {
		tl.t[b] = float64(b) * r.Series.Step
	}
	for _, iv := range r.Histograms.Intervals {
		gi, ok := at[iv.Group]
		b := int(math.Round(iv.T / r.Series.Step))
		if !ok || b < 0 || b >= n {
			continue
		}
		st, err := iv.figures()
		if err != nil || st.count == 0 {
			continue
		}
		p50, p99 := float64(st.p50)/1000, float64(st.p99)/1000
		tl.p50[gi][b], tl.p99[gi][b] = p50, p99
		tl.lo, tl.hi = math.Min(tl.lo, p50), math.Max(tl.hi, p99)
	}
	if math.IsInf(tl.lo, 1) {
		return nil, false
	}
	return tl, true
}

// interactiveJSON is the page's chart data, safe inside a <script> element.
func interactiveJSON(charts []iChart) (template.JS, error) {
	if charts == nil {
		charts = []iChart{}
	}
	b, err := json.Marshal(charts)
	if err != nil {
		return "", fmt.Errorf("report: encoding the interactive charts: %w", err)
	}
	return template.JS(b), nil
}
