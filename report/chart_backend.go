package report

// This file draws the backend over time: busy workers against the worker
// count, and the listen backlog.

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"
)

func drawBackend(c draw.Canvas, title string, r *Results) {
	if r.Series == nil || len(r.Series.Backend) == 0 {
		drawNoData(c, title, "no backend samples in the results")
		return
	}
	samples := r.Series.Backend
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
	drawTimePlot(p, tiles.At(c, 0, 0))

	q := newPlot("Backlog queue", "", "model time (s)", "queued requests")
	peak = stepSeries(q, ts, queue, t1, paletteColor(3), "queue length", true)
	q.X.Min, q.X.Max = t0, t1
	q.Y.Min, q.Y.Max = 0, peak*1.15+0.5
	drawTimePlot(q, tiles.At(c, 0, 1))
}

// BackendMeasured reports whether r says anything of the backend's workers:
// false for a live run against a --target whose backend was not polled
// (--backend-stats), which has no backend samples and no busy worker, and
// whose worker count is the scenario's, not a measurement. Results without
// series (older files) are taken as measured.
func BackendMeasured(r *Results) bool {
	return r.Series == nil || len(r.Series.Backend) > 0 || r.Backend.BusyMax > 0 || r.Backend.Utilization > 0
}
