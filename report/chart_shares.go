package report

// This file draws every outcome's share per group: what the spectrum, of ok
// responses only, leaves out.

import (
	"image/color"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"

	"stampede/workload"
)

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
