package report

// This file draws the report's charts with gonum.org/v1/plot. Each chart is
// a pure function of Results (or of a Comparison and its points), drawn onto
// a canvas; render turns a drawing into PNG and SVG bytes.

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"image/png"
	"math"
	"slices"
	"stampede/workload"
	"strconv"
	"strings"
	"sync"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart is one rendered chart. Name is a file-name stem ("latency",
// "outcomes"…), Title the human title; PNG and SVG hold the same drawing.
// A nil PNG or SVG means that format was not rendered.
type Chart struct {
	Name  string
	Title string
	PNG   []byte
	SVG   []byte

	// Width and Height are the PNG's size in pixels.
	Width, Height int

	// Caption says how to read the chart; empty for none.
	Caption string
}

// Chart geometry: pixel sizes at chartDPI, so that a 1200 px wide image is
// 900 pt and a 12 pt label is 16 px high.
const (
	chartDPI    = 96
	chartWidth  = 1200 // px
	chartHeight = 600  // px
	panelHeight = 340  // px, one panel of a multi-panel chart

	maxOutcomePanels = 4  // busiest groups drawn in the outcomes chart
	maxKeyLines      = 8  // busiest keys drawn in the in-flight chart
	fairnessTop      = 20 // tenants named in the fairness chart; the rest are summed
)

// formats selects what render produces.
type formats uint8

const (
	formatPNG formats = 1 << iota
	formatSVG
)

// px converts pixels at chartDPI to a vg length.
func px(n int) vg.Length { return vg.Length(n) * vg.Inch / chartDPI }

// Fonts: a sans face reads better than gonum's default serif on screens.
var (
	fontFace  = font.Font{Typeface: "Liberation", Variant: "Sans"}
	fontTitle = font.From(fontFace, 15)
	fontLabel = font.From(fontFace, 12.5)
	fontTick  = font.From(fontFace, 11)
	fontNote  = font.From(fontFace, 24)
)

// Colours of the outcomes, fixed so every chart and report agrees.
var outcomeColors = [workload.NumOutcomes]color.RGBA{
	workload.OK:             {0x2c, 0xa0, 0x2c, 0xff}, // green
	workload.Rejected:       {0xff, 0x7f, 0x0e, 0xff}, // orange
	workload.BackendError:   {0xd6, 0x27, 0x28, 0xff}, // red
	workload.GatewayTimeout: {0x94, 0x67, 0xbd, 0xff}, // purple
	workload.ClientTimeout:  {0x8c, 0x56, 0x4b, 0xff}, // brown
	workload.Dropped:        {0x7f, 0x7f, 0x7f, 0xff}, // grey
	workload.Error:          {0x17, 0x17, 0x17, 0xff}, // black
}

// outcomeLabels are the outcomes' names in chart legends.
var outcomeLabels = [workload.NumOutcomes]string{
	workload.OK:             "ok",
	workload.Rejected:       "rejected",
	workload.BackendError:   "502 backend error",
	workload.GatewayTimeout: "504 gateway timeout",
	workload.ClientTimeout:  "client timeout",
	workload.Dropped:        "dropped",
	workload.Error:          "other error",
}

// palette colours the lines of groups, keys and points.
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x2c, 0xa0, 0x2c, 0xff},
	{0xff, 0x7f, 0x0e, 0xff}, {0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff},
	{0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff}, {0xbc, 0xbd, 0x22, 0xff},
	{0x17, 0xbe, 0xcf, 0xff},
}

func paletteColor(i int) color.RGBA { return palette[i%len(palette)] }

// Charts draws the charts of one run: the latency spectrum per group,
// outcomes over time, the backend over time, in-flight requests per key and
// fairness between tenants. A chart without data says "no data"; Charts
// fails only if drawing fails.
func Charts(r *Results) ([]Chart, error) { return runCharts(r, formatPNG|formatSVG) }

// runCharts draws r's charts in the formats f.
func runCharts(r *Results, f formats) ([]Chart, error) {
	if r == nil {
		return nil, errors.New("report: charts of nil results")
	}
	type spec struct {
		name, title, caption string
		h                    int
		draw                 func(draw.Canvas, string)
	}
	specs := []spec{
		{"latency", "Latency percentile spectrum per group", spectrumCaption(r), chartHeight, func(c draw.Canvas, t string) { drawSpectrum(c, t, r) }},
		{"shares", "Outcome shares per group", "Every request, by how it ended: what the spectrum above, of ok responses only, leaves out.", sharesHeight(r), func(c draw.Canvas, t string) { drawShares(c, t, r) }},
	}
	if _, ok := latencyOverTime(r); ok {
		specs = append(specs, spec{"latency-time", "Latency over time per group", "p50 and p99 of each group's ok responses per interval of histograms.hlog; drag across the chart to zoom, double-click to zoom out.", chartHeight, func(c draw.Canvas, t string) { drawLatencyTime(c, t, r) }})
	}
	specs = append(specs, spec{"outcomes", "Outcomes over time per group", "Requests per second of model time by outcome, for the busiest groups; the time axis is the same on every chart.", outcomesHeight(r), func(c draw.Canvas, t string) { drawOutcomes(c, t, r) }})
	if BackendMeasured(r) {
		specs = append(specs, spec{"backend", "Backend workers and queue over time", "Busy workers against the worker count, and the listen backlog, sampled once a model second.", chartHeight + 100, func(c draw.Canvas, t string) { drawBackend(c, t, r) }})
	}
	specs = append(specs,
		spec{"keys", keysTitle(r), keysCaption(r), chartHeight, func(c draw.Canvas, t string) { drawKeys(c, t, r) }},
		spec{"fairness", "Fairness between tenants", "Each tenant's share of the rejections against its share of the backend's work; tenants are named with their host.", chartHeight + 100, func(c draw.Canvas, t string) { drawFairness(c, t, r) }},
	)
	// The charts are independent: draw them in parallel, each goroutine
	// writing only its own slot, and wait for all.
	charts := make([]Chart, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i, s := range specs {
		wg.Go(func() {
			charts[i], errs[i] = render(s.name, s.title, chartWidth, s.h, f, func(c draw.Canvas) { s.draw(c, s.title) })
			charts[i].Caption = s.caption
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return charts, nil
}

// pngEncoder trades a little size for speed: deflate dominates the cost of
// writing a chart at the default level.
var pngEncoder = png.Encoder{CompressionLevel: png.BestSpeed}

// render draws fn onto a w×h pixel canvas in the formats f.
func render(name, title string, w, h int, f formats, fn func(draw.Canvas)) (ch Chart, err error) {
	ch = Chart{Name: name, Title: title, Width: w, Height: h}
	defer func() {
		// gonum panics on some degenerate inputs (an empty range on a log
		// axis); a report must still be written, so turn it into an error.
		if p := recover(); p != nil {
			err = fmt.Errorf("report: drawing chart %s: %v", name, p)
		}
	}()
	if f&formatPNG != 0 {
		c := vgimg.NewWith(vgimg.UseWH(px(w), px(h)), vgimg.UseDPI(chartDPI))
		fn(draw.New(c))
		var b bytes.Buffer
		if err := pngEncoder.Encode(&b, c.Image()); err != nil {
			return ch, fmt.Errorf("report: encoding chart %s as PNG: %w", name, err)
		}
		ch.PNG = b.Bytes()
	}
	if f&formatSVG != 0 {
		c := vgsvg.New(px(w), px(h))
		fn(draw.New(c))
		var b bytes.Buffer
		if _, err := c.WriteTo(&b); err != nil {
			return ch, fmt.Errorf("report: encoding chart %s as SVG: %w", name, err)
		}
		ch.SVG = b.Bytes()
	}
	return ch, nil
}

// newPlot returns a plot with the report's fonts, a title and axis labels.
// A subtitle, if any, goes on a second title line.
func newPlot(title, subtitle, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	if subtitle != "" {
		p.Title.Text += "\n" + subtitle
	}
	p.Title.TextStyle.Font = fontTitle
	p.Title.Padding = px(10)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = fontLabel
		a.Tick.Label.Font = fontTick
		a.Padding = 0
	}
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.X.Tick.Marker = niceTicks{}
	p.Y.Tick.Marker = niceTicks{}
	p.Legend.TextStyle.Font = fontTick
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.Padding = px(3)
	p.Legend.ThumbnailWidth = px(28)
	p.Add(gridLines())
	return p
}

// drawPlot draws p onto c with its legend, if any, in a column on the right
// outside the data area, so that no line or bar hides under it.
func drawPlot(p *plot.Plot, c draw.Canvas) {
	c = pad(c)
	leg := p.Legend
	p.Legend = plot.NewLegend()
	w := leg.Rectangle(c).Size().X
	if w <= 0 {
		p.Draw(c)
		return
	}
	w += px(16)
	p.Draw(draw.Crop(c, 0, -w, 0, 0))
	titleH := p.Title.TextStyle.Height(p.Title.Text) + p.Title.Padding + px(8)
	strip := draw.Crop(c, c.Max.X-c.Min.X-w+px(16), 0, 0, -titleH)
	leg.Draw(strip)
}

// gridLines returns light grid lines.
func gridLines() *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{0xe0}
	g.Horizontal.Color = color.Gray{0xe0}
	g.Vertical.Width = vg.Points(0.5)
	g.Horizontal.Width = vg.Points(0.5)
	return g
}

// pad insets a plot's canvas so that neighbouring panels and the image edge
// keep some air.
func pad(c draw.Canvas) draw.Canvas {
	return draw.Crop(c, px(12), -px(20), px(12), -px(8))
}

// drawNoData draws title and a large "no data" with why beneath it.
func drawNoData(c draw.Canvas, title, why string) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	hdl := text.Plain{Fonts: font.DefaultCache}
	ts := text.Style{Color: color.Black, Font: fontTitle, XAlign: draw.XCenter, YAlign: draw.YTop, Handler: hdl}
	mid := vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: (c.Min.Y + c.Max.Y) / 2}
	c.FillText(ts, vg.Point{X: mid.X, Y: c.Max.Y - px(12)}, title)
	ns := text.Style{Color: color.Gray{0x80}, Font: fontNote, XAlign: draw.XCenter, YAlign: draw.YCenter, Handler: hdl}
	c.FillText(ns, mid, "no data")
	if why != "" {
		ws := ts
		ws.Font = fontLabel
		ws.Color = color.Gray{0x60}
		c.FillText(ws, vg.Point{X: mid.X, Y: mid.Y - px(30)}, why)
	}
}

// fillWhite paints the background of a multi-panel chart.
func fillWhite(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
}

// line returns a line plotter of xys in colour col, width w points.
func line(xys plotter.XYs, col color.Color, w float64, dashed bool) *plotter.Line {
	l := &plotter.Line{XYs: xys}
	l.LineStyle = draw.LineStyle{Color: col, Width: vg.Points(w)}
	if dashed {
		l.LineStyle.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	}
	return l
}

// ---- 1. latency spectrum ----

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
	if hi/lo > 30 {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = msLogTicks{}
		p.Y.Min, p.Y.Max = lo/1.3, hi*1.6
	} else {
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

// msLogTicks marks a log axis of milliseconds at readable durations
// ("500 ms", "2 s", "1 min"): 1-2-5 steps over a narrow range, about one
// tick a decade over a wide one.
type msLogTicks struct{}

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
		ticks[i] = plot.Tick{Value: c.ms, Label: fmtMS(c.ms)}
	}
	return ticks
}

// fmtMS labels a tick in ms as every latency of the report is written
// (FormatLatency).
func fmtMS(ms float64) string { return formatMs(ms) }

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

// ---- 2. outcomes over time ----

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
	slices.SortStableFunc(gs, func(a, b gi) int {
		switch {
		case a.total > b.total:
			return -1
		case a.total < b.total:
			return 1
		}
		return 0
	})
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
		p.X.Min, p.X.Max = 0, float64(len(g.Counts))*s.Step
		p.Y.Min, p.Y.Max = 0, math.Max(hi*1.1, 1)
		if row < len(idx)-1 {
			p.X.Label.Text = ""
		}
		drawPlot(p, tiles.At(c, 0, row))
	}
}

// maxBars is the most bars or windows a time series is drawn with; longer
// series are averaged (or, for in-flight counts, maximised) over windows.
const maxBars = 240

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

// ---- 3. backend ----

func drawBackend(c draw.Canvas, title string, r *Results) {
	var samples []BackendSample
	if r.Series != nil {
		samples = r.Series.Backend
	}
	if len(samples) == 0 {
		drawNoData(c, title, "no backend samples in the results")
		return
	}
	fillWhite(c)
	ts := make([]float64, len(samples))
	busy := make([]float64, len(samples))
	queue := make([]float64, len(samples))
	for i, s := range samples {
		ts[i], busy[i], queue[i] = s.T, float64(s.Busy), float64(s.Queued)
	}
	t0, t1 := 0.0, math.Max(ts[len(ts)-1], timeEnd(r)) // the time axis every chart shares
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: px(6)}

	p := newPlot(title, fmt.Sprintf("utilization %.0f%%, at most %d busy, at most %d queued",
		100*r.Backend.Utilization, r.Backend.BusyMax, r.Backend.QueueMax), "", "busy workers")
	peak := stepSeries(p, ts, busy, t1, paletteColor(0), "busy workers", true)
	if w := r.Backend.Workers; w > 0 {
		wl := line(plotter.XYs{{X: t0, Y: float64(w)}, {X: t1, Y: float64(w)}}, color.RGBA{0xd6, 0x27, 0x28, 0xff}, 2, true)
		p.Add(wl)
		p.Legend.Add(fmt.Sprintf("workers (%d)", w), wl)
		peak = math.Max(peak, float64(w))
	}
	p.X.Min, p.X.Max = t0, t1
	p.Y.Min, p.Y.Max = 0, peak*1.15+0.5
	drawPlot(p, tiles.At(c, 0, 0))

	q := newPlot("Backlog queue", "", "model time (s)", "queued requests")
	peak = stepSeries(q, ts, queue, t1, paletteColor(3), "queue length", true)
	q.X.Min, q.X.Max = t0, t1
	q.Y.Min, q.Y.Max = 0, peak*1.15+0.5
	drawPlot(q, tiles.At(c, 0, 1))
}

// ---- 4. in-flight per key ----

func drawKeys(c draw.Canvas, title string, r *Results) {
	var keys []KeySeries
	if r.Series != nil {
		keys = r.Series.Keys
		if len(keys) == 0 {
			drawHosts(c, title, r)
			return
		}
	}
	type ks struct {
		k    *KeySeries
		n    int
		peak int
		area float64
	}
	var busy []ks
	for i := range keys {
		k := &keys[i]
		e := ks{k: k, n: min(len(k.T), len(k.InFlight))}
		if e.n == 0 {
			continue
		}
		for j := 0; j < e.n; j++ {
			e.peak = max(e.peak, k.InFlight[j])
			e.area += float64(k.InFlight[j])
		}
		busy = append(busy, e)
	}
	if len(busy) == 0 {
		drawNoData(c, title, "no limiter keys were sampled")
		return
	}
	slices.SortStableFunc(busy, func(a, b ks) int {
		if a.peak != b.peak {
			return b.peak - a.peak
		}
		switch {
		case a.area > b.area:
			return -1
		case a.area < b.area:
			return 1
		}
		return 0
	})
	busy = busy[:min(len(busy), maxKeyLines)]
	sub := fmt.Sprintf("the %d busiest of %d sampled keys", len(busy), len(keys))
	if r.Series.Limit > 0 {
		sub += fmt.Sprintf("; limit_conn %d per key", r.Series.Limit)
	} else {
		sub += "; no limit_conn"
	}
	t0, t1 := 0.0, timeEnd(r) // the time axis every chart shares
	for _, e := range busy {
		t1 = math.Max(t1, e.k.T[e.n-1])
	}
	names := tenantNames(r)
	p := newPlot(title, sub, "model time (s)", "requests in flight")
	peak := float64(r.Series.Limit)
	for i, e := range busy {
		ts := e.k.T[:e.n]
		vs := make([]float64, e.n)
		for j := range vs {
			vs[j] = float64(e.k.InFlight[j])
		}
		name := e.k.Key
		if n, ok := names[name]; ok {
			name = n
		}
		peak = math.Max(peak, stepSeries(p, ts, vs, t1, paletteColor(i), name, false))
	}
	if l := r.Series.Limit; l > 0 {
		ll := line(plotter.XYs{{X: t0, Y: float64(l)}, {X: t1, Y: float64(l)}}, color.Black, 2.2, true)
		p.Add(ll)
		p.Legend.Add(fmt.Sprintf("limit (%d)", l), ll)
	}
	p.X.Min, p.X.Max = t0, t1
	p.Y.Min, p.Y.Max = 0, peak*1.15+0.5
	drawPlot(p, c)
}

// drawHosts draws the busiest hosts' mean requests in flight, for runs
// whose limiter counted no keys: limit_req only, or no limit at all.
func drawHosts(c draw.Canvas, title string, r *Results) {
	hosts := r.Series.Hosts
	if len(hosts) == 0 {
		drawNoData(c, title, "no requests were sent")
		return
	}
	hosts = hosts[:min(len(hosts), maxKeyLines)]
	t1 := timeEnd(r)
	names := tenantNames(r)
	p := newPlot(title, fmt.Sprintf("the %d busiest hosts; mean requests in flight per %s s of model time, from the clients' side; no limit_conn",
		len(hosts), trimFloat(r.Series.Step, 2)), "model time (s)", "requests in flight")
	peak := 0.0
	for i, h := range hosts {
		ts := make([]float64, len(h.InFlight))
		for b := range ts {
			ts[b] = float64(b) * r.Series.Step
		}
		if len(ts) == 0 {
			continue
		}
		name := h.Host
		if n, ok := names[name]; ok {
			name = n
		}
		peak = math.Max(peak, stepSeries(p, ts, h.InFlight, t1, paletteColor(i), name, false))
	}
	p.X.Min, p.X.Max = 0, t1
	p.Y.Min, p.Y.Max = 0, peak*1.15+0.5
	drawPlot(p, c)
}

// ---- 5. fairness ----

// tenantShare is one bar pair of the fairness chart.
type tenantShare struct {
	name            string
	rejected, usage float64 // shares of all rejections and of all worker time, 0..1
}

// fairnessShares returns each tenant's share of all rejected requests and
// of worker time, the top n by the larger of the two, then "the rest" summed
// when there are more, and whether the worker time is exact. It is exact when
// the results carry worker time (work_s) for some tenant: the engine's own
// account of how long workers held each request. Results without it (older
// files, or a live target that does not say its service time) get an
// estimate, ok requests × their mean latency, which counts time in the
// backlog too; the chart then says "estimated".
func fairnessShares(r *Results, n int) (shares []tenantShare, exact bool) {
	for _, t := range r.Tenants {
		if t.WorkS > 0 {
			exact = true
			break
		}
	}
	var rejTotal, useTotal float64
	shares = make([]tenantShare, 0, len(r.Tenants))
	for _, t := range r.Tenants {
		s := tenantShare{name: tenantLabel(t.Name, t.Host), rejected: float64(t.Rejected), usage: t.WorkS}
		if !exact {
			s.usage = float64(t.OK) * t.Latency.Mean
		}
		rejTotal += s.rejected
		useTotal += s.usage
		shares = append(shares, s)
	}
	if rejTotal+useTotal == 0 {
		return nil, exact
	}
	for i := range shares {
		if rejTotal > 0 {
			shares[i].rejected /= rejTotal
		}
		if useTotal > 0 {
			shares[i].usage /= useTotal
		}
	}
	slices.SortStableFunc(shares, func(a, b tenantShare) int {
		ka, kb := math.Max(a.rejected, a.usage), math.Max(b.rejected, b.usage)
		switch {
		case ka > kb:
			return -1
		case ka < kb:
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	if len(shares) <= n+1 {
		return shares, exact
	}
	rest := tenantShare{name: fmt.Sprintf("the other %d", len(shares)-n)}
	for _, s := range shares[n:] {
		rest.rejected += s.rejected
		rest.usage += s.usage
	}
	return append(shares[:n:n], rest), exact
}

// fairnessSubtitle says what the fairness chart's bars measure.
func fairnessSubtitle(exact bool) string {
	if exact {
		return "share of all rejected requests, and of the backend's worker time"
	}
	return "share of all rejected requests, and of worker time (estimated as ok requests × mean latency)"
}

func drawFairness(c draw.Canvas, title string, r *Results) {
	shares, exact := fairnessShares(r, fairnessTop)
	if len(shares) == 0 {
		drawNoData(c, title, "no tenant had ok or rejected requests")
		return
	}
	p := newPlot(title, fairnessSubtitle(exact), "share (%)", "")
	n := len(shares)
	rej := make(plotter.Values, n)
	use := make(plotter.Values, n)
	names := make([]string, n)
	hi := 0.0
	for i, s := range shares { // first at the top
		j := n - 1 - i
		rej[j], use[j], names[j] = 100*s.rejected, 100*s.usage, s.name
		hi = math.Max(hi, math.Max(rej[j], use[j]))
	}
	bw := px(max(4, min(12, (chartHeight-100)/(2*n+n/2+1))))
	ub, err1 := plotter.NewBarChart(use, bw)
	rb, err2 := plotter.NewBarChart(rej, bw)
	if err1 != nil || err2 != nil {
		drawNoData(c, title, "the shares could not be drawn")
		return
	}
	for _, b := range []*plotter.BarChart{ub, rb} {
		b.Horizontal = true
		b.LineStyle.Width = 0
	}
	ub.Color = paletteColor(0)
	rb.Color = outcomeColors[workload.Rejected]
	ub.Offset = bw / 2
	rb.Offset = -bw / 2
	p.Add(ub, rb)
	p.Legend.Add("share of worker time", ub)
	p.Legend.Add("share of rejected requests", rb)
	p.NominalY(names...)
	p.X.Min, p.X.Max = 0, math.Min(100, hi*1.15+1)
	drawPlot(p, c)
}

// ---- histograms ----

// groupQuantilers returns each group's latency histogram, the merge of its
// tenants' encoded histograms, by group name. A group some of whose
// tenants' histograms are missing or unreadable is left out, so that its
// spectrum falls back to the summary rather than showing part of the group.
func groupQuantilers(r *Results) map[string]quantiler {
	if r.Histograms == nil || len(r.Histograms.Tenants) != len(r.Tenants) {
		return nil
	}
	hs := map[string]*hdr.PackedHistogram{}
	bad := map[string]bool{}
	for i, t := range r.Tenants {
		if bad[t.Group] {
			continue
		}
		enc := r.Histograms.Tenants[i]
		if enc == "" {
			bad[t.Group] = t.Latency.Count > 0
			continue
		}
		h, err := decode(enc)
		if err != nil {
			bad[t.Group] = true
			continue
		}
		g := hs[t.Group]
		if g == nil {
			g = newHist()
			hs[t.Group] = g
		}
		if g.Merge(h) != 0 {
			bad[t.Group] = true
		}
	}
	out := make(map[string]quantiler, len(hs))
	for name, h := range hs {
		if !bad[name] {
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

// ---- 6. comparisons ----

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

// ComparisonCharts draws the charts of a comparison against the swept
// value: each group's p99 latency, ok rate and rejected share. points are
// the points' results in c's order; they are optional, used only where c
// lacks a point's groups.
func ComparisonCharts(c *Comparison, points []*Results) ([]Chart, error) {
	return comparisonCharts(c, points, formatPNG|formatSVG)
}

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
		p.Y.Tick.Marker = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
			ticks := niceTicks{}.Ticks(lo, hi)
			for i := range ticks {
				ticks[i].Label = fmtMS(ticks[i].Value)
			}
			return ticks
		})
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
