package report

// This file draws the charts that read time and shares across groups:
// latency over time from the interval histograms, every outcome's share
// per group, and the SLO lines drawn on any chart of an SLO's metric.

import (
	"fmt"
	"image/color"
	"math"
	"stampede/workload"

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
	if hi/lo > 30 {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = msLogTicks{}
		p.Y.Min, p.Y.Max = lo/1.3, hi*1.6
	} else {
		p.Y.Min, p.Y.Max = 0, hi*1.2
		p.Y.Tick.Marker = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
			ticks := niceTicks{}.Ticks(lo, hi)
			for i := range ticks {
				ticks[i].Label = fmtMS(ticks[i].Value)
			}
			return ticks
		})
	}
	p.X.Min, p.X.Max = 0, end
	drawPlot(p, c)
}

// outcomeShare is one group's requests by outcome, as shares 0..1.
type outcomeShare struct {
	group  string
	shares [workload.NumOutcomes]float64
}

func outcomeShares(r *Results) []outcomeShare {
	var out []outcomeShare
	for _, g := range r.Groups {
		if g.Requests == 0 {
			continue
		}
		s := outcomeShare{group: g.Name}
		n := float64(g.Requests)
		s.shares = [workload.NumOutcomes]float64{
			workload.OK: float64(g.OK) / n, workload.Rejected: float64(g.Rejected) / n,
			workload.BackendError: float64(g.BackendErrors) / n, workload.GatewayTimeout: float64(g.GatewayTimeouts) / n,
			workload.ClientTimeout: float64(g.ClientTimeouts) / n, workload.Dropped: float64(g.Dropped) / n,
			workload.Error: float64(g.Errors) / n,
		}
		out = append(out, s)
	}
	return out
}

// sharesHeight fits one bar per group.
func sharesHeight(r *Results) int { return max(260, 140+46*len(r.Groups)) }

// drawShares draws every outcome's share of each group's requests as one
// stacked bar per group, with the groups' rate SLOs as ticks on their bars:
// what the latency spectrum, of ok responses only, leaves out.
func drawShares(c draw.Canvas, title string, r *Results) {
	shares := outcomeShares(r)
	if len(shares) == 0 {
		drawNoData(c, title, "no requests were recorded")
		return
	}
	p := newPlot(title, "share of each group's requests by how they ended; black ticks are ok_rate SLOs", "share of requests (%)", "")
	n := len(shares)
	names := make([]string, n)
	for i, s := range shares {
		names[n-1-i] = s.group // first at the top
	}
	bw := px(max(10, min(28, (sharesHeight(r)-120)/(2*n))))
	var below *plotter.BarChart
	for o := workload.Outcome(0); o < workload.NumOutcomes; o++ {
		vals := make(plotter.Values, n)
		used := false
		for i, s := range shares {
			vals[n-1-i] = 100 * s.shares[o]
			used = used || s.shares[o] > 0
		}
		if !used {
			continue
		}
		b, err := plotter.NewBarChart(vals, bw)
		if err != nil {
			continue
		}
		b.Horizontal = true
		b.LineStyle.Width = 0
		b.Color = outcomeColors[o]
		if below != nil {
			b.StackOn(below)
		}
		p.Add(b)
		p.Legend.Add(outcomeLabels[o], b)
		below = b
	}
	for i, s := range shares {
		y := float64(n - 1 - i)
		for _, slo := range r.SLO {
			// ok_rate is read at the end of the ok bar, which comes
			// first; the other rates have no one place on a stacked bar.
			if slo.Group != s.group || slo.Metric != "ok_rate" {
				continue
			}
			x := 100 * slo.Threshold
			l := line(plotter.XYs{{X: x, Y: y - 0.45}, {X: x, Y: y + 0.45}}, color.Black, 2.4, false)
			p.Add(l)
		}
	}
	p.NominalY(names...)
	p.X.Min, p.X.Max = 0, 100
	drawPlot(p, c)
}

// BackendMeasured reports whether r says anything of the backend's workers:
// false for a live run against a --target whose backend was not polled
// (--backend-stats), which has no backend samples and no busy worker, and
// whose worker count is the scenario's, not a measurement. Results without
// series (older files) are taken as measured.
func BackendMeasured(r *Results) bool {
	return r.Series == nil || len(r.Series.Backend) > 0 || r.Backend.BusyMax > 0 || r.Backend.Utilization > 0
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

// keysTitle names the in-flight chart by what it shows.
func keysTitle(r *Results) string {
	if r.Series != nil && len(r.Series.Keys) == 0 && len(r.Series.Hosts) > 0 {
		return "Requests in flight per host (busiest hosts)"
	}
	return "In-flight requests per limit_conn key (busiest keys)"
}

func keysCaption(r *Results) string {
	if r.Series != nil && len(r.Series.Keys) == 0 && len(r.Series.Hosts) > 0 {
		return "No limit_conn counted keys in this run (limit_req only, or no limit): each host's mean requests in flight per model second, as its clients saw them, so time spent delayed by limit_req counts. No limit line: nothing limits in-flight requests."
	}
	return "The most requests each key had in flight in each model second, against the limit_conn limit."
}

// tenantNames returns a label for each host or key that names its tenant:
// "tenant (host)" when one tenant has the host, "host (N tenants)" when
// several share it.
func tenantNames(r *Results) map[string]string {
	by := map[string][]string{}
	for _, t := range r.Tenants {
		if t.Host != "" {
			by[t.Host] = append(by[t.Host], t.Name)
		}
	}
	out := make(map[string]string, len(by))
	for h, ns := range by {
		if len(ns) == 1 {
			out[h] = tenantLabel(ns[0], h)
		} else {
			out[h] = fmt.Sprintf("%s (%d tenants)", h, len(ns))
		}
	}
	return out
}

// tenantLabel is how charts and tables name a tenant: its name, then its
// host.
func tenantLabel(name, host string) string {
	if host == "" || host == name {
		return name
	}
	return name + " (" + host + ")"
}
