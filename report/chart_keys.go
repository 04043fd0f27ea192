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
