package live

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"stampede/scenarios"
)

// time_scale: auto is settled by a calibration before the run: the
// scenario's own open load (each open group at its busiest rate, through
// the same backend routes and limits, on a pair of its own) is played for
// calibrationStep of wall time at rising rates, that is at ever faster time
// scales from calibrationFrom down, until a step breaks the comfort of the
// delay budget: the generator's lateness at p99 or its longest stall, in
// model time, above half of DelayBudget. The run then takes the scale one
// step slower than the fastest that held, for a step is short and a run
// long. Closed-model groups are left out: their
// requests may take minutes, and their rate is small beside the open
// load's.
const (
	calibrationStep = 250 * time.Millisecond
	calibrationFrom = 0.1
	calibrationMin  = 0.005
)

// CalibrationStep is one step of a calibration: the scale tried, the wall
// request rate it meant, and the generator's delays it measured (wall).
type CalibrationStep struct {
	Scale    float64
	Rate     float64 // requests per wall second
	Lateness time.Duration
	Stall    time.Duration
	OK       bool
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
		fmt.Fprintf(&b, " %g at %.0f req/s: late p99 %.3f ms, stall %.3f ms wall, %s", s.Scale, s.Rate, float64(s.Lateness)/1e6, float64(s.Stall)/1e6, verdict)
	}
	b.WriteString(")")
	return b.String()
}

// calibrationScenario returns sc's open load alone, each group at its
// busiest rate from the start, played for step of wall time at scale, with
// no SLO.
func calibrationScenario(sc *scenarios.Scenario, scale float64, step time.Duration) *scenarios.Scenario {
	c := *sc
	c.Name = sc.Name + "-calibration"
	c.TimeScale, c.TimeScaleAuto = scale, false
	c.Duration = time.Duration(float64(step) / scale)
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
// calibrationFrom. It fails only when the pair cannot be started.
func Calibrate(ctx context.Context, sc *scenarios.Scenario, transport string) (Calibration, error) {
	budget := DelayBudget(sc)
	var cal Calibration
	scales := slices.Clone(niceScales)
	slices.Reverse(scales) // slowest first
	from := slices.Index(scales, calibrationFrom)
	try := func(scale float64) (bool, error) {
		c := calibrationScenario(sc, scale, calibrationStep)
		rate := openRate(c) / scale
		res, err := runResults(ctx, c, Options{Transport: transport})
		if err != nil {
			return false, err
		}
		v := res.Validity
		late := time.Duration(v.LatenessP99MS * scale * float64(time.Millisecond))
		stall := time.Duration(v.LongestStallMS * scale * float64(time.Millisecond))
		limit := time.Duration(comfort * float64(budget) * scale)
		ok := late <= limit && stall <= limit && res.Totals.Requests > 0
		cal.Steps = append(cal.Steps, CalibrationStep{Scale: scale, Rate: rate, Lateness: late, Stall: stall, OK: ok})
		return ok, nil
	}
	if len(calibrationScenario(sc, 1, calibrationStep).Tenants) == 0 {
		cal.Scale = calibrationFrom
		return cal, nil
	}
	ok, err := try(scales[from])
	if err != nil {
		return cal, err
	}
	if !ok {
		// Slower until one holds, up to real time, and that one: it was
		// measured against a machine that failed the step before.
		cal.Scale = 1
		for i := from - 1; i >= 0 && ctx.Err() == nil; i-- {
			if ok, err := try(scales[i]); err != nil {
				return cal, err
			} else if ok {
				cal.Scale = scales[i]
				break
			}
		}
		return cal, nil
	}
	held := []float64{scales[from]}
	for i := from + 1; i < len(scales) && scales[i] >= calibrationMin && ctx.Err() == nil; i++ {
		ok, err := try(scales[i])
		if err != nil {
			return cal, err
		}
		if !ok {
			break
		}
		held = append(held, scales[i])
	}
	// A step is a quarter of a second and a run minutes, on a machine
	// whose neighbours come and go: the run takes one step slower than the
	// fastest that held.
	fastest := slices.Index(scales, held[len(held)-1])
	cal.Scale = scales[max(fastest-1, 0)]
	return cal, nil
}
