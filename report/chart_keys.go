package report

// This file draws in-flight requests per limit key over time (the busiest
// keys against the limit), or the busiest hosts' when no key was sampled.

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"
)

func drawKeys(c draw.Canvas, title string, r *Results) {
	var keys []KeySeries
	if r.Series != nil {
		keys = r.Series.Keys
		if len(keys) == 0 && len(r.passed) > 0 {
			drawPassed(c, title, r)
			return
		}
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
	slices.SortStableFunc(busy, func(a, b ks) int { return cmp.Or(cmp.Compare(b.peak, a.peak), cmp.Compare(b.area, a.area)) })
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
	drawTimePlot(p, c)
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
	drawTimePlot(p, c)
}

// drawPassed draws, for the tenants limit_req delayed most, the requests it
// passed on per model second (solid) and those of them it delayed first
// (dashed), by the moment they were sent.
func drawPassed(c draw.Canvas, title string, r *Results) {
	t1 := timeEnd(r)
	step := r.Series.Step
	p := newPlot(title, fmt.Sprintf("the %d tenants limit_req delayed most; requests/s passed on (solid), of them delayed (dashed)",
		len(r.passed)), "model time (s)", "requests/s (model time)")
	peak := 0.0
	for i, ps := range r.passed {
		if len(ps.passed) == 0 {
			continue
		}
		// One bucket of nothing after the last, so that the step ends
		// where the series does rather than at the end of the drain.
		ts := make([]float64, len(ps.passed)+1)
		for b := range ts {
			ts[b] = float64(b) * step
		}
		col := paletteColor(i)
		name := tenantLabel(ps.tenant, ps.host)
		peak = math.Max(peak, stepSeries(p, ts, append(slices.Clip(ps.passed), 0), t1, col, name, false))
		if ps.delayedTotal == 0 {
			continue
		}
		xys := make(plotter.XYs, 0, 2*len(ts))
		for b, v := range ps.delayed {
			xys = append(xys, plotter.XY{X: ts[b], Y: v}, plotter.XY{X: ts[b+1], Y: v})
		}
		l := line(xys, col, 1.4, true)
		p.Add(l)
		p.Legend.Add(name+" delayed", l)
	}
	p.X.Min, p.X.Max = 0, t1
	p.Y.Min, p.Y.Max = 0, peak*1.15+0.5
	drawTimePlot(p, c)
}

// keysTitle names the in-flight chart by what it shows.
func keysTitle(r *Results) string {
	if r.Series != nil && len(r.Series.Keys) == 0 && len(r.passed) > 0 {
		return "Requests passed on and delayed by limit_req per tenant"
	}
	if r.Series != nil && len(r.Series.Keys) == 0 && len(r.Series.Hosts) > 0 {
		return "Requests in flight per host (busiest hosts)"
	}
	return "In-flight requests per limit_conn key (busiest keys)"
}

func keysCaption(r *Results) string {
	if r.Series != nil && len(r.Series.Keys) == 0 && len(r.passed) > 0 {
		s := "limit_req counts requests, not requests in flight: for the tenants it delayed most, each line is the requests sent in each model second that it passed on and, dashed, how many of them it held back first (a key's burst above its rate). Rejections are in the outcomes chart."
		if !slices.ContainsFunc(r.passed, func(ps passedSeries) bool { return ps.delayedTotal > 0 }) {
			s += " No request was delayed (nodelay, or the engine cannot see delays: the live engine does not)."
		}
		return s
	}
	if r.Series != nil && len(r.Series.Keys) == 0 && len(r.Series.Hosts) > 0 {
		return "No limit_conn counted keys in this run (limit_req only, or no limit): each host's mean requests in flight per model second, as its clients saw them, so time spent delayed by limit_req counts. No limit line: nothing limits in-flight requests."
	}
	return "The most requests each key had in flight in each model second, against the limit_conn limit."
}
