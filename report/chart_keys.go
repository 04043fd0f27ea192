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

// keysView is what the in-flight chart shows of a run.
type keysView int

const (
	viewKeys    keysView = iota // limit_conn keys sampled, or no series at all
	viewPassed                  // no keys; limit_req passed requests on
	viewHosts                   // no keys; the busiest hosts from the clients' side
	viewNothing                 // series without keys, limit_req or hosts: no request was sent
)

// keysViewOf says what the in-flight chart shows of r: its limit_conn keys
// when it sampled any, else what limit_req passed on, else its hosts.
func keysViewOf(r *Results) keysView {
	switch {
	case r.Series == nil || len(r.Series.Keys) > 0:
		return viewKeys
	case len(r.passed) > 0:
		return viewPassed
	case len(r.Series.Hosts) > 0:
		return viewHosts
	}
	return viewNothing
}

func drawKeys(c draw.Canvas, title string, r *Results) {
	switch keysViewOf(r) {
	case viewPassed:
		drawPassed(c, title, r)
		return
	case viewHosts, viewNothing:
		drawHosts(c, title, r)
		return
	}
	busy := busiestKeys(r.Series)
	if len(busy) == 0 {
		drawNoData(c, title, "no limiter keys were sampled")
		return
	}
	sub := fmt.Sprintf("the %d busiest of %d sampled keys", len(busy), len(r.Series.Keys))
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

// busyKey is a sampled key with its peak and its in-flight sum over the
// first n samples, the ones with both a time and a count.
type busyKey struct {
	k    *KeySeries
	n    int
	peak int
	area float64
}

// busiestKeys returns the maxKeyLines busiest of s's sampled keys, by peak
// then by area; nil for no series.
func busiestKeys(s *Series) []busyKey {
	if s == nil {
		return nil
	}
	var busy []busyKey
	for i := range s.Keys {
		k := &s.Keys[i]
		e := busyKey{k: k, n: min(len(k.T), len(k.InFlight))}
		if e.n == 0 {
			continue
		}
		for j := 0; j < e.n; j++ {
			e.peak = max(e.peak, k.InFlight[j])
			e.area += float64(k.InFlight[j])
		}
		busy = append(busy, e)
	}
	slices.SortStableFunc(busy, func(a, b busyKey) int { return cmp.Or(cmp.Compare(b.peak, a.peak), cmp.Compare(b.area, a.area)) })
	return busy[:min(len(busy), maxKeyLines)]
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
	switch keysViewOf(r) {
	case viewPassed:
		return "Requests passed on and delayed by limit_req per tenant"
	case viewHosts:
		return "Requests in flight per host (busiest hosts)"
	}
	return "In-flight requests per limit_conn key (busiest keys)"
}

func keysCaption(r *Results) string {
	switch keysViewOf(r) {
	case viewPassed:
		s := "limit_req counts requests, not requests in flight: for the tenants it delayed most, each line is the requests sent in each model second that it passed on and, dashed, how many of them it held back first (a key's burst above its rate). Rejections are in the outcomes chart."
		if !slices.ContainsFunc(r.passed, func(ps passedSeries) bool { return ps.delayedTotal > 0 }) {
			s += " No request was delayed (nodelay, or the engine cannot see delays: the live engine does not)."
		}
		return s
	case viewHosts:
		return "No limit_conn counted keys in this run (limit_req only, or no limit): each host's mean requests in flight per model second, as its clients saw them, so time spent delayed by limit_req counts. No limit line: nothing limits in-flight requests."
	}
	return "The most requests each key had in flight in each model second, against the limit_conn limit."
}
