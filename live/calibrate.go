package live

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"stampede/clock"
	"stampede/loadgen"
	"stampede/report"
	"stampede/scenarios"
)

// time_scale: auto is settled by a calibration before the run: the
// scenario's own open load (each open group at its busiest rate, through
// the same backend routes and limits, on a pair of its own, into a recorder
// as the run's) is played for calibrationStep of wall time at each of the
// nice scales from calibrationFrom faster, down to the scenario's floor
// (see floorScale), until a step does not hold; when calibrationFrom does
// not hold, the steps go slower until one holds, up to real time. The run
// takes the fastest scale that held, or 1 when none did.
//
// Whether a scale s holds is judged by the validity rule (see judge) with a
// margin of two on each side, on what the steps measured in wall time,
// where the run's delay budget D (DelayBudget) is D·s:
//
//   - at its own step, the generator's send lateness and the process's
//     timers stayed within half of D·s at p99: the machine kept up with
//     the rate s means;
//   - and the stalls longer than half of D·s, over the steps at s and
//     slower (the loads no heavier than s's), cover at most half of the τ/2
//     of their wall time that the run may lose to stalls longer than D·s.
//
// The stalls are pooled because they come mostly from the machine, not the
// load: its neighbours' time slices and its hypervisor's steal, a few
// milliseconds at a time, a few times a second on a busy host. One step
// catches such stalls by chance, the steps together see a second or so,
// and counting those of half the budget catches the shorter, more frequent
// ones that foretell the longer.
//
// The floor is the scale at which D·s is minWallBudget: a second of
// calibration cannot tell whether a machine shared with other work will
// stay quiet for the minute a run lasts, and a budget shorter than the
// time slices its neighbours take is at the mercy of each of them.
const (
	calibrationStep = 400 * time.Millisecond
	calibrationFrom = 0.1
)

// minWallBudget is the shortest delay budget, in wall time, a run is given
// (see floorScale). On a shared 2-core VM whose hypervisor took 1-17% of
// the CPU, the generator of stock-balance (a budget of 100 ms of model
// time) stalled past its 2-3 ms of wall budget 32-57 times in each of the
// runs at time scale 0.02 and 0.03 that were inconclusive, one in three;
// at 0.05 (5 ms) three runs of four were inconclusive, though each
// calibration step before them had no stall over 1 ms; at 0.1 (10 ms) and
// 0.2 the runs of a quiet machine were conclusive. (Beside a one-core CPU
// hog or a neighbour's test suites, runs at 0.1-0.3 were inconclusive too,
// and said so.)
const minWallBudget = 10 * time.Millisecond

// floorScale returns the fastest scale a calibration tries for a delay
// budget of budget: the nice scale at or above the one at which budget
// lasts minWallBudget of wall time.
func floorScale(budget time.Duration) float64 {
	return roundScaleUp(float64(minWallBudget) / float64(max(budget, 1)))
}

// CalibrationStep is one step of a calibration: the scale tried, the wall
// request rate it meant, and the delays it measured, in wall time.
type CalibrationStep struct {
	Scale    clock.Scale
	Rate     float64       // requests per wall second
	Wall     time.Duration // how long the step played
	Sent     uint64        // requests sent
	Lateness time.Duration // the generator's send lateness at p99
	Timers   time.Duration // the process's precise timers' lateness at p99
	Stalls   loadgen.Stalls
	Steal    float64 // the hypervisor's share of the machine's CPU time, when Linux says
	OK       bool    // the scale held (see holds)
}

// Calibration is what time_scale: auto found.
type Calibration struct {
	Scale float64 // the time scale chosen
	Steps []CalibrationStep
}

// String says what the calibration found, in one line.
func (c Calibration) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "time_scale auto: %g (calibration:", c.Scale)
	for i, s := range c.Steps {
		if i > 0 {
			b.WriteString(";")
		}
		verdict := "held"
		if !s.OK {
			verdict = "too fast"
		}
		fmt.Fprintf(&b, " %g at %.0f req/s: late p99 %.3f ms, %d stalls, longest %.3f ms wall", float64(s.Scale), s.Rate, float64(s.Lateness)/1e6, s.Stalls.Count, float64(s.Stalls.Longest)/1e6)
		if s.Steal >= 0.001 {
			fmt.Fprintf(&b, ", steal %.1f%%", 100*s.Steal)
		}
		fmt.Fprintf(&b, ", %s", verdict)
	}
	b.WriteString(")")
	return b.String()
}

// holds reports whether steps[i]'s scale holds for a scenario of delay
// budget budget and tail share tail (see the rule above and tailShare).
func holds(steps []CalibrationStep, i int, budget time.Duration, tail float64) bool {
	s := steps[i]
	limit := time.Duration(comfort * float64(s.Scale.Wall(budget)))
	if s.Sent == 0 || s.Lateness > limit || s.Timers > limit {
		return false
	}
	var stalled, wall time.Duration
	for _, o := range steps {
		if o.Scale.Factor() >= s.Scale.Factor() {
			t, _ := o.Stalls.Over(limit)
			stalled += t
			wall += o.Wall
		}
	}
	return wall > 0 && float64(stalled) <= comfort*tail/2*float64(wall)
}

// chosen returns the scale a calibration of steps takes: the fastest that
// held, but none faster than floor; 1 (real time) when none held.
func chosen(steps []CalibrationStep, floor float64) float64 {
	scale := 1.0
	for _, s := range steps {
		if s.OK {
			scale = min(scale, s.Scale.Factor())
		}
	}
	return max(scale, floor)
}

// calibrationScenario returns sc's open load alone, each group at its
// busiest rate from the start, played for step of wall time at scale, with
// no SLO.
func calibrationScenario(sc *scenarios.Scenario, scale clock.Scale, step time.Duration) *scenarios.Scenario {
	c := *sc
	c.Name = sc.Name + "-calibration"
	c.TimeScale, c.TimeScaleAuto = scale.Factor(), false
	c.Duration = scale.Model(step)
	c.SLO, c.Sweep = nil, nil
	c.Tenants = nil
	for _, g := range sc.Tenants {
		if g.Load.Model == scenarios.Closed {
			continue
		}
		l := g.Load
		for _, st := range l.Stages {
			l.Rate = max(l.Rate, st.Rate)
		}
		l.Stages, l.Start, l.Stop = nil, 0, 0
		g.Load = l
		c.Tenants = append(c.Tenants, g)
	}
	return &c
}

// openRate returns the requests per model second of c's tenants, all
// open-model.
func openRate(c *scenarios.Scenario) float64 {
	var r float64
	for _, g := range c.Tenants {
		r += float64(max(g.Count, 1)) * g.Load.Rate
	}
	return r
}

// Calibrate finds the time scale for sc on this machine (see
// calibrationStep), over transport. A scenario with no open load gets
// calibrationFrom, or its floor when that is slower. It fails only when
// the pair cannot be started.
func Calibrate(ctx context.Context, sc *scenarios.Scenario, transport string) (Calibration, error) {
	budget, tail := DelayBudget(sc), tailShare(sc)
	var cal Calibration
	floor := floorScale(budget)
	if len(calibrationScenario(sc, 1, calibrationStep).Tenants) == 0 {
		cal.Scale = max(calibrationFrom, floor)
		return cal, nil
	}
	scales := slices.Clone(niceScales)
	slices.Reverse(scales) // slowest first
	from := slices.Index(scales, max(calibrationFrom, floor))
	try := func(scale clock.Scale) (bool, error) {
		c := calibrationScenario(sc, scale, calibrationStep)
		_, m, err := runMeasured(ctx, c, report.NewRecorder(c), Options{Transport: transport})
		if err != nil {
			return false, err
		}
		cal.Steps = append(cal.Steps, CalibrationStep{
			Scale:    m.scale,
			Rate:     openRate(c) / scale.Factor(),
			Wall:     m.wall,
			Sent:     m.sent,
			Lateness: m.lateness.P99,
			Timers:   m.wakes.Quantile(0.99),
			Stalls:   m.stalls,
			Steal:    m.steal(),
		})
		i := len(cal.Steps) - 1
		cal.Steps[i].OK = holds(cal.Steps, i, budget, tail)
		return cal.Steps[i].OK, nil
	}
	ok, err := try(clock.Scale(scales[from]))
	if err != nil {
		return cal, err
	}
	if ok {
		for i := from + 1; i < len(scales) && scales[i] >= floor && ctx.Err() == nil; i++ {
			if ok, err := try(clock.Scale(scales[i])); err != nil {
				return cal, err
			} else if !ok {
				break
			}
		}
	} else {
		for i := from - 1; i >= 0 && ctx.Err() == nil; i-- {
			if ok, err := try(clock.Scale(scales[i])); err != nil {
				return cal, err
			} else if ok {
				break
			}
		}
	}
	cal.Scale = chosen(cal.Steps, floor)
	return cal, nil
}
