package report

// This file draws fairness between tenants: each tenant's share of the
// rejections against its share of the backend's work.

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"

	"stampede/workload"
)

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
