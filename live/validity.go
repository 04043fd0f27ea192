package live

import (
	"fmt"
	"math"
	"time"

	"stampede/clock"
	"stampede/loadgen"
	"stampede/report"
	"stampede/scenarios"
	"stampede/workload"
)

// A live run judges its own validity by this rule, which the README's "Live
// and simulated runs" states too.
//
// The delay budget D is a tenth of the tightest latency SLO's threshold (of
// any group and percentile), in model time. A scenario with no latency SLO
// takes a tenth of its shortest timeout (client, proxy read, backend
// worker) instead, and one with neither 100 ms. The run is inconclusive
// when the generator's own delay, converted to model time by dividing it
// by the time scale, could explain a latency of that size:
//
//   - its send lateness at p99 is above D;
//   - or its stalls longer than D (windows in which sends were due and none
//     went out, see loadgen.Stalls) cover more than half the tail share of
//     the run's model time: τ/2, τ being 1 − q of the tightest latency
//     SLO's percentile (1% for a p99, 0.1% for a p999, none for max) and
//     1% without one. A stall delays the requests due during it; fewer
//     than a pQ leaves out cannot move it, and the half leaves room for
//     those in flight and the burst that follows.
//   - or the process's precise timers (the generator's, the proxy's and
//     the backend's, see clock.Wakes) woke later than D at p99;
//   - or the tare it took off drifted during the run (its highest estimate
//     less its lowest) by more than D.
//
// An inconclusive run says so with these figures and, where Linux tells
// them, the CPU steal and cgroup throttling during the run, which are the
// usual causes; its SLO verdicts are still computed and shown but decide
// nothing (exit status 4, not 3). A run against a target is judged the same
// way without the tare. A sim run is always conclusive.

// A failed SLO of an inconclusive run is one the generator's delay cannot
// explain, and still fails the run (exit status 3), when it failed by far
// more than that delay: W being the worst of the run's delays in model time
// (lateness at p99, longest stall, tare drift), a latency SLO whose value is
// more than 10·W above its threshold (a stall's burst can queue the backend
// for several times the stall, not ten), or a rate SLO (ok_rate and the
// like, which move when requests time out) when W is under a tenth of the
// scenario's shortest timeout.

// defaultBudget is the delay budget of a scenario with no latency SLO and
// no timeout.
const defaultBudget = 100 * time.Millisecond

// budgetShare is the part of an SLO threshold the generator's delay may
// take.
const budgetShare = 0.1

// comfort is how far inside the budget a suggested time scale keeps the
// delays measured: half of it.
const comfort = 0.5

// DelayBudget returns the delay budget D of sc in model time (see the rule
// above).
func DelayBudget(sc *scenarios.Scenario) time.Duration {
	tightest := math.Inf(1)
	for _, s := range sc.SLO {
		if report.IsLatencyMetric(s.Metric) && s.Threshold > 0 {
			tightest = min(tightest, s.Threshold)
		}
	}
	if !math.IsInf(tightest, 1) {
		return time.Duration(tightest * budgetShare * float64(time.Millisecond))
	}
	shortest := time.Duration(0)
	for _, d := range timeoutsOf(sc) {
		if shortest == 0 || d < shortest {
			shortest = d
		}
	}
	if shortest == 0 {
		return defaultBudget
	}
	return time.Duration(float64(shortest) * budgetShare)
}

// osSample is what the operating system says of the process's CPU at one
// moment (see sampleOS).
type osSample struct {
	cpu            time.Duration // CPU time used, user and system
	jiffies, steal uint64        // /proc/stat: all CPU time, and stolen
	stealOK        bool
	throttled      uint64        // times the cgroup's quota stopped it
	throttledTime  time.Duration // for this long in all
	throttleOK     bool
}

// measured is what a live run measured of itself, in wall time.
type measured struct {
	scale    clock.Scale
	wall     time.Duration // the run's wall time, from its first send due
	lateness workload.Lateness
	stalls   loadgen.Stalls
	tare     bool // a tare was measured and taken off
	tareMin  time.Duration
	tareMax  time.Duration
	before   osSample
	after    osSample
	sent     uint64
	wakes    clock.Wakes // the process's precise timers during the run
}

// steal returns the share of the machine's CPU time the hypervisor gave to
// others during the run, 0 when Linux does not say.
func (m measured) steal() float64 {
	b, a := m.before, m.after
	if !b.stealOK || !a.stealOK || a.jiffies <= b.jiffies {
		return 0
	}
	return float64(a.steal-b.steal) / float64(a.jiffies-b.jiffies)
}

// niceScales are the time scales judge suggests, each a round number.
var niceScales = []float64{0.001, 0.002, 0.003, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.5, 1}

// roundScaleUp returns the smallest nice scale at least s, and 1 above it.
func roundScaleUp(s float64) float64 {
	for _, n := range niceScales {
		if n >= s*(1-1e-9) {
			return n
		}
	}
	return 1
}

// judge applies the rule to what a live run of sc measured.
func judge(sc *scenarios.Scenario, m measured) *report.Validity {
	scale := m.scale.Factor()
	budget := DelayBudget(sc)
	model := m.scale.Model
	ms := func(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Microsecond)) / 1000 }
	v := &report.Validity{Conclusive: true, Reasons: []string{}, BudgetMS: ms(budget)}
	// worst is the largest wall delay that broke the budget, from which the
	// suggested scale follows.
	var worst time.Duration
	breaks := func(wall time.Duration, format string, args ...any) {
		if model(wall) <= budget {
			return
		}
		v.Conclusive = false
		v.Reasons = append(v.Reasons, fmt.Sprintf(format, args...))
		worst = max(worst, wall)
	}
	l := m.lateness
	v.LatenessP99MS = ms(model(l.P99))
	breaks(l.P99, "the generator sent %s of model time late at p99 (%.3f ms wall at time scale %g), above the delay budget of %s (a tenth of the tightest latency SLO)",
		fmtDur(model(l.P99)), float64(l.P99)/1e6, scale, fmtDur(budget))
	s := m.stalls
	v.LongestStallMS = ms(model(s.Longest))
	var stalled time.Duration
	stalled, v.StallsOverBudget = s.Over(m.scale.Wall(budget))
	tail := tailShare(sc)
	if share := float64(stalled) / float64(m.scale.Wall(sc.Duration)); v.StallsOverBudget > 0 && share > tail/2 {
		v.Conclusive = false
		v.Reasons = append(v.Reasons, fmt.Sprintf("the generator stalled %d times for longer than the delay budget of %s, %s of model time in all (%.2f%% of the run, above half the %.2g%% of requests the tightest latency SLO leaves out), the longest %s (%.3f ms wall): sends were due and none went out",
			v.StallsOverBudget, fmtDur(budget), fmtDur(model(stalled)), 100*share, 100*tail, fmtDur(model(s.Longest)), float64(s.Longest)/1e6))
		worst = max(worst, s.Longest)
	}
	if m.wakes.Count() > 0 {
		tl := m.wakes.Quantile(0.99)
		v.TimersP99MS = ms(model(tl))
		breaks(tl, "the process's timers (generator, proxy and backend) woke %s of model time late at p99 (%.3f ms wall), above the delay budget of %s: the CPU was not there when they fired",
			fmtDur(model(tl)), float64(tl)/1e6, fmtDur(budget))
	}
	if m.tare {
		drift := max(m.tareMax-m.tareMin, 0)
		v.TareDriftMS = ms(model(drift))
		breaks(drift, "the tare taken off every latency drifted by %s of model time during the run (%.3f to %.3f ms wall), above the delay budget of %s",
			fmtDur(model(drift)), float64(m.tareMin)/1e6, float64(m.tareMax)/1e6, fmtDur(budget))
	}
	b, a := m.before, m.after
	v.CPUSteal = math.Round(1e4*m.steal()) / 1e4
	if b.throttleOK && a.throttleOK {
		v.CgroupThrottled = a.throttled - b.throttled
		v.CgroupThrottledWallMS = ms(a.throttledTime - b.throttledTime)
	}
	if m.sent > 0 && a.cpu > b.cpu {
		v.CPUPerRequestUS = math.Round(float64(a.cpu-b.cpu)/float64(m.sent)/100) / 10
	}
	if v.Conclusive {
		v.SuggestedTimeScale = scale
		return v
	}
	if v.CPUSteal >= 0.01 {
		v.Reasons = append(v.Reasons, fmt.Sprintf("the hypervisor gave %.1f%% of the machine's CPU time to others during the run (steal)", 100*v.CPUSteal))
	}
	if v.CgroupThrottled > 0 {
		v.Reasons = append(v.Reasons, fmt.Sprintf("the cgroup's CPU quota stopped the process %d times, for %.1f ms of wall time in all", v.CgroupThrottled, v.CgroupThrottledWallMS))
	}
	// The delays measured, in wall time, fit the budget comfortably at the
	// scale where worst/scale = comfort × budget.
	v.SuggestedTimeScale = roundScaleUp(max(float64(worst)/(comfort*float64(budget)), scale*2))
	if float64(worst) > comfort*float64(budget) {
		v.Reasons = append(v.Reasons, fmt.Sprintf("even at time scale 1 (real time) these delays would take more than half the delay budget of %s", fmtDur(budget)))
	}
	return v
}

// amplification is how many times the generator's worst delay a latency
// SLO may miss by and still be explained by it.
const amplification = 10

// explain fills v.Unexplained from the SLO verdicts of the run, whose
// worst delay, W of the rule in model time, was w.
func explain(v *report.Validity, slos []report.SLOResult, sc *scenarios.Scenario, w time.Duration) {
	if v.Conclusive {
		return
	}
	shortest := time.Duration(0)
	for _, d := range timeoutsOf(sc) {
		if shortest == 0 || d < shortest {
			shortest = d
		}
	}
	for _, s := range slos {
		if s.Pass || s.Reason != "" {
			continue
		}
		var unexplained bool
		if report.IsLatencyMetric(s.Metric) {
			miss := time.Duration((s.Value - s.Threshold) * float64(time.Millisecond))
			if s.Op == ">" || s.Op == ">=" {
				miss = -miss // a latency that should be above: delay only adds
			}
			unexplained = miss > amplification*w
		} else {
			unexplained = shortest > 0 && w < time.Duration(float64(shortest)*budgetShare)
		}
		if unexplained {
			v.Unexplained = append(v.Unexplained, s.Name)
		}
	}
}

// worstDelay returns W of the rule, the worst of the delays v states, in
// model time.
func worstDelay(v *report.Validity) time.Duration {
	worst := max(v.LatenessP99MS, v.LongestStallMS, v.TimersP99MS, v.TareDriftMS)
	return time.Duration(worst * float64(time.Millisecond))
}

// timeoutsOf returns sc's timeouts that are set.
func timeoutsOf(sc *scenarios.Scenario) []time.Duration {
	var ds []time.Duration
	for _, d := range []time.Duration{sc.Proxy.ReadTimeout, sc.Backend.Timeout} {
		if d > 0 {
			ds = append(ds, d)
		}
	}
	for _, g := range sc.Tenants {
		if d := g.Load.ClientTimeout; d > 0 {
			ds = append(ds, d)
		}
	}
	return ds
}

// tailShare returns τ of the rule: 1 − q of sc's tightest latency SLO's
// percentile, 1% without one.
func tailShare(sc *scenarios.Scenario) float64 {
	tail, any := 1.0, false
	for _, s := range sc.SLO {
		var t float64
		switch s.Metric {
		case "p50":
			t = 0.5
		case "p90":
			t = 0.1
		case "p95":
			t = 0.05
		case "p99", "mean":
			t = 0.01
		case "p999":
			t = 0.001
		case "max":
			t = 0
		default:
			continue
		}
		tail, any = min(tail, t), true
	}
	if !any {
		return 0.01
	}
	return tail
}

// fmtDur formats a model-time duration for a reason: 3 significant digits
// with a unit.
func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.3g ms", float64(d)/1e6)
	case d < time.Second:
		return fmt.Sprintf("%.3g ms", float64(d)/1e6)
	case d < time.Minute:
		return fmt.Sprintf("%.3g s", d.Seconds())
	default:
		return fmt.Sprintf("%.3g min", d.Minutes())
	}
}
