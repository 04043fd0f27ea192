package report

// This file holds what every chart shares: the Chart type, geometry, fonts
// and colours, the list of a run's charts (runCharts, drawn in parallel),
// and render, which turns a drawing into PNG and SVG bytes. Each chart is a
// pure function of Results (or of a Comparison and its points) drawn onto a
// canvas by gonum.org/v1/plot, in a file of its own: chart_spectrum.go,
// chart_shares.go, chart_latency_time.go, chart_outcomes.go,
// chart_backend.go, chart_keys.go, chart_fairness.go and compare_chart.go.

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"image/png"
	"sync"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"stampede/workload"
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

// runCharts draws the charts of one run in the formats f: the latency
// spectrum per group, outcome shares, latency and outcomes over time, the
// backend over time, in-flight requests per key and fairness between
// tenants. A chart without data says "no data"; runCharts fails only if
// drawing fails.
func runCharts(r *Results, f formats) ([]Chart, error) {
	if r == nil {
		return nil, errors.New("report: charts of nil results")
	}
	r.prepare()
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

// The time charts share one plot area, so that stacked one above the other
// their time axes line up pixel for pixel: the data area starts timeLeft
// pixels from the image's left edge and ends where a legend column of
// timeLegend pixels begins.
const (
	timeLeft   = 96  // px
	timeLegend = 330 // px, the legend column and its gap
)

// drawTimePlot draws p, a chart against model time, onto c (the full width
// of its image) with its data area at the time charts' shared place, and
// its legend in the column on the right.
func drawTimePlot(p *plot.Plot, c draw.Canvas) {
	leg := p.Legend
	p.Legend = plot.NewLegend()
	left := c.Min.X + px(timeLeft)
	right := c.Max.X - px(timeLegend)
	area := draw.Crop(c, 0, -px(timeLegend), px(12), -px(8))
	// The y axis's width depends on its labels: move the canvas so that
	// the data area, not the axis, starts at left; then trim its right so
	// the data area ends at right whatever the last tick label needs.
	area = draw.Crop(area, left-p.DataCanvas(area).Min.X, 0, 0, 0)
	area = draw.Crop(area, 0, right-p.DataCanvas(area).Max.X, 0, 0)
	p.Draw(area)
	titleH := p.Title.TextStyle.Height(p.Title.Text) + p.Title.Padding + px(8)
	leg.Draw(draw.Crop(c, c.Max.X-c.Min.X-px(timeLegend)+px(16), -px(8), px(12), -titleH))
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
