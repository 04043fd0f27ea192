package live

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"stampede/clock"
	"stampede/fakebackend"
	"stampede/internal/h1"
	"stampede/loadgen"
	"stampede/scenarios"
)

// The tare of the built-in path is measured with probes: requests for the
// backend's WaitPath, each waiting there about as long as the scenario's
// typical request (see probeWait), timed less that wait. calibrate takes
// calibrationProbes probes before the run; during it, track sends one every
// probeGap and keeps the driver's tare at the estimate (see estimate) from
// the last tareWindow, because what a loopback hop costs on a small machine
// drifts with its load: from one second to the next by a tenth of a
// millisecond, which is 1% of a second of model time at time scale 0.01.
// A probe costs the trio as much as a request does: at 100 a second they
// were a sixth of the CPU of a 500 requests/s run, so they come every 20
// ms and the window still spans about a second.
const (
	calibrationProbes = 24
	tareWindow        = 48
	probeGap          = 20 * time.Millisecond
)

// Bounds of probeWait.
const (
	minProbeWait = 100 * time.Microsecond
	maxProbeWait = 10 * time.Millisecond
)

// probeWait returns how long a probe waits in the backend: the wall time of
// the scenario's typical service time, the median over its routes' mean
// service times weighted by how many requests each gets, within
// minProbeWait..maxProbeWait. (Means, because a Dist has no median, and
// drawing from one to estimate it would take draws from its stream.) What
// a loopback hop costs depends on how long the path's goroutines were idle
// before it (on a VM, an idle CPU takes long to wake), so a probe must idle
// like the requests whose tare it measures: probes of 5 ms under 0.9 ms
// pages (stock-balance at 0.03) took a tenth of a millisecond more than
// the pages did.
func probeWait(sc *scenarios.Scenario, scale clock.Scale) time.Duration {
	type weighted struct {
		d time.Duration
		w float64
	}
	routes := sc.Backend.Routes
	rate := make([]float64, len(routes)) // requests per model second
	for _, g := range sc.Tenants {
		l := &g.Load
		total := totalWeight(l.Routes)
		var perTenant float64
		switch l.Model {
		case scenarios.Closed:
			// A user sends about once per think and service time.
			cycle := l.Think
			for _, wr := range l.Routes {
				if d := routes[wr.Route].Service; d != nil {
					cycle += time.Duration(float64(d.Mean()) * wr.Weight / total)
				}
			}
			perTenant = float64(l.Users) / max(cycle.Seconds(), 1e-3)
		default:
			perTenant = l.Rate
			if len(l.Stages) > 0 {
				var n, d float64
				for _, st := range l.Stages {
					n += st.Rate * st.Duration.Seconds()
					d += st.Duration.Seconds()
				}
				perTenant = n / max(d, 1e-9)
			}
		}
		for _, wr := range l.Routes {
			rate[wr.Route] += float64(g.Count) * perTenant * wr.Weight / total
		}
	}
	var ws []weighted
	var all float64
	for i, r := range routes {
		if rate[i] > 0 && r.Service != nil {
			ws = append(ws, weighted{r.Service.Mean(), rate[i]})
			all += rate[i]
		}
	}
	if len(ws) == 0 {
		return maxProbeWait
	}
	slices.SortFunc(ws, func(a, b weighted) int { return cmp.Compare(a.d, b.d) })
	var acc float64
	med := ws[len(ws)-1].d
	for _, w := range ws {
		if acc += w.w; acc >= all/2 {
			med = w.d
			break
		}
	}
	return min(max(scale.Wall(med), minProbeWait), maxProbeWait)
}

func totalWeight(wr []scenarios.WeightedRoute) float64 {
	var t float64
	for _, r := range wr {
		t += r.Weight
	}
	return max(t, 1e-12)
}

// prober times requests that do no work through the built-in reverse proxy
// and backend, from a keep-alive client like the driver's, on a server like
// the proxy's. It has a listener of its own without the limits, so that no
// limiter key counts a probe. It is not safe for concurrent use; close it
// when done.
type prober struct {
	wait time.Duration
	srv  server
	done chan struct{}
	tr   *h1.Client
	uri  string
	host string
}

// probeTimeout bounds one probe.
const probeTimeout = 5 * time.Second

func (p *pair) newProber(wait time.Duration) (*prober, error) {
	ln, dial, err := p.listen()
	if err != nil {
		return nil, err
	}
	// The driver's own client, so that the tare is what its requests pay.
	addr := ln.Addr().String()
	tr := &h1.Client{Dial: func(ctx context.Context) (net.Conn, error) { return dial(ctx, "tcp", addr) }, MaxIdle: 1, SharedContext: true}
	pb := &prober{
		wait: wait,
		srv:  p.newServer(p.rp),
		done: make(chan struct{}),
		tr:   tr,
		uri:  fakebackend.WaitPath + "?wait=" + wait.String(),
		host: addr,
	}
	go func() {
		defer close(pb.done)
		_ = pb.srv.Serve(ln) // ErrServerClosed once close runs
	}()
	return pb, nil
}

func (pb *prober) close() {
	pb.tr.CloseIdleConnections()
	_ = pb.srv.Close()
	<-pb.done
}

// probe times one request, less the backend's wait.
func (pb *prober) probe(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	status, err := pb.tr.GetBy(ctx, start.Add(probeTimeout), pb.uri, pb.host, nil)
	if err != nil {
		return 0, err
	}
	if status != http.StatusNoContent {
		return 0, fmt.Errorf("GET http://%s%s: status %d, want 204 from the fake backend", pb.host, pb.uri, status)
	}
	return time.Since(start) - pb.wait, nil
}

// tareTracker keeps the window of recent probes, and the tares taken off
// during the run. It is not safe for concurrent use.
type tareTracker struct {
	window []time.Duration // a ring of the last tareWindow probes
	next   int
	sorted []time.Duration // scratch
	// The tares estimated during the run, summed, and how many: what
	// the run took off on average, in bounded memory however long it is.
	sum time.Duration
	n   int
	// The lowest and highest of them: how far the path's cost drifted.
	lo, hi time.Duration
}

// add puts a probe into the window.
func (tt *tareTracker) add(d time.Duration) {
	if len(tt.window) < tareWindow {
		tt.window = append(tt.window, d)
		return
	}
	tt.window[tt.next] = d
	tt.next = (tt.next + 1) % tareWindow
}

// observe adds a probe made during the run and returns the tare to take
// off from now on.
func (tt *tareTracker) observe(d time.Duration) time.Duration {
	tt.add(d)
	tare := tt.tare()
	if tt.n == 0 || tare < tt.lo {
		tt.lo = tare
	}
	tt.hi = max(tt.hi, tare)
	tt.sum += tare
	tt.n++
	return tare
}

// tare returns the estimate from the window.
func (tt *tareTracker) tare() time.Duration { return estimate(tt.window, &tt.sorted) }

// runTare returns the mean of the tares taken off during the run, or the
// window's estimate when no probe was made during it.
func (tt *tareTracker) runTare() time.Duration {
	if tt.n == 0 {
		return tt.tare()
	}
	return tt.sum / time.Duration(tt.n)
}

// tareOutlier is how many times the median a probe may take before the
// estimate counts it as that much only.
const tareOutlier = 4

// estimate returns the tare that probes ds say, never below zero: their
// mean, each counted as at most tareOutlier times their median. The mean,
// not the median, because what the path adds is skewed (a loaded machine
// makes some hops slow) and a request's latency is its service time plus
// that: for service times spread wider than the path's cost, as a page's
// are, the median of the sum is the service's median plus about the mean of
// the cost. Measured with the stock-balance scenario's 249 sites at time
// scale 0.03, the probes' median was 410 µs and their mean 537 µs, and the
// pages' live p50 came out 114 µs of wall time above the simulator's when
// the median was taken off. Wild probes, a pause of milliseconds, are cut
// to tareOutlier medians: they move a latency's tail, not its middle.
//
// The price is paid by a service time that does not vary: there the median
// latency is the service plus the median cost, and taking the mean off
// takes the difference too much. A constant 1 s route at time scale 0.01
// measured medians of 985.1-1000.4 ms (the median-based tare gave
// 995.3-1012.7 ms).
func estimate(ds []time.Duration, scratch *[]time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append((*scratch)[:0], ds...)
	slices.Sort(s)
	*scratch = s
	limit := tareOutlier * max(s[len(s)/2], 0)
	var sum time.Duration
	for _, d := range s {
		sum += min(max(d, 0), limit)
	}
	return sum / time.Duration(len(s))
}

// calibrate measures the tare of the built-in path before the run, from
// calibrationProbes probes. At time scale 0.01 the tare of a fraction of
// a millisecond would add tens of milliseconds to every model latency; the
// driver subtracts it instead.
func (pb *prober) calibrate(ctx context.Context, tt *tareTracker) (time.Duration, error) {
	for range calibrationProbes {
		d, err := pb.probe(ctx)
		if err != nil {
			return 0, err
		}
		tt.add(d)
	}
	return tt.tare(), nil
}

// track probes every probeGap until ctx ends, setting drv's tare to the
// estimate from the last tareWindow probes after each. A probe that fails
// (a loaded machine can time one out) is skipped; after maxProbeFailures
// in a row the tracking ends, leaving the tare as it was, since the pair is
// then broken and the run's own requests say so.
func (pb *prober) track(ctx context.Context, tt *tareTracker, drv *loadgen.Driver) {
	failures := 0
	for clock.Wait(ctx, time.Now().Add(probeGap), false) {
		d, err := pb.probe(ctx)
		if err != nil {
			if failures++; failures >= maxProbeFailures {
				return
			}
			continue
		}
		failures = 0
		drv.SetTare(tt.observe(d))
	}
}

// maxProbeFailures is how many probes in a row may fail before track gives
// up.
const maxProbeFailures = 5
