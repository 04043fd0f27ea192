package live

import (
	"testing"
	"time"

	"stampede/clock"
)

// stepWall is how long each step of the tests played.
const stepWall = 400 * time.Millisecond

// step is a calibration step of stepWall at scale s that sent
// requests, was late by late at p99 and stalled for each of stalls.
func step(s clock.Scale, late time.Duration, stalls ...time.Duration) CalibrationStep {
	c := CalibrationStep{Scale: s, Wall: stepWall, Sent: 100, Lateness: late}
	for _, d := range stalls {
		c.Stalls.Add(d)
	}
	return c
}

// TestCalibrationChoice holds the calibration's rule to its figures, for
// stock-balance's delay budget (100 ms of model time, a tenth of p99 < 1s)
// unless a case says otherwise, and its tail share (1%): each step is
// judged as Calibrate judges it, on the steps measured up to it, and the
// run takes the fastest scale that held, none faster than the case's floor
// (see TestFloorScale for the scenario's own).
func TestCalibrationChoice(t *testing.T) {
	const tail = 0.01
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	for _, c := range []struct {
		name   string
		budget time.Duration // 100 ms when zero
		floor  float64       // none when zero
		steps  []CalibrationStep
		held   []bool
		want   float64
	}{
		{
			// A budget of a second (p99 < 10s) is 5 ms of wall time at
			// 0.005, where lateness may take half of it.
			name:   "faster until late",
			budget: time.Second,
			steps:  []CalibrationStep{step(0.1, ms(0.2)), step(0.05, ms(0.3)), step(0.03, ms(0.6), ms(1)), step(0.02, ms(1.2)), step(0.01, ms(3)), step(0.005, ms(3))},
			held:   []bool{true, true, true, true, true, false},
			want:   0.01,
		},
		{
			// At 0.02 the budget is 2 ms of wall time and lateness may
			// take half of it; 0.03 held, but the floor is 0.1.
			name:  "the floor",
			floor: 0.1,
			steps: []CalibrationStep{step(0.1, ms(0.2)), step(0.05, ms(0.3)), step(0.03, ms(0.6), ms(1)), step(0.02, ms(1.2))},
			held:  []bool{true, true, true, false},
			want:  0.1,
		},
		{
			// Stalls over half of 3 ms, 4 ms of them in the 1.2 s of the
			// steps at 0.03 and slower, above the 3 ms (a quarter of τ)
			// that leaves.
			name:  "stalls over half the budget",
			steps: []CalibrationStep{step(0.1, ms(0.2)), step(0.05, ms(0.3)), step(0.03, ms(0.5), ms(2), ms(2))},
			held:  []bool{true, true, false},
			want:  0.05,
		},
		{
			name:  "stalls under the allowance",
			steps: []CalibrationStep{step(0.1, ms(0.2)), step(0.05, ms(0.3)), step(0.03, ms(0.5), ms(2.9)), step(0.02, ms(0.5), ms(0.9), ms(0.9)), step(0.01, ms(0.9))},
			held:  []bool{true, true, true, true, false},
			want:  0.02,
		},
		{
			// A 3 ms stall in the first step is under half of 0.1's
			// 10 ms budget but over half of 0.05's 5 ms: 3 ms in 0.8 s
			// is more than a quarter of τ.
			name:  "a slower step's stall counts against a faster scale",
			steps: []CalibrationStep{step(0.1, ms(0.2), ms(3)), step(0.05, ms(0.3))},
			held:  []bool{true, false},
			want:  0.1,
		},
		{
			// A faster step's stalls come with a heavier load, and do not
			// count against the slower scales.
			name:  "a faster step's stall does not count against a slower scale",
			steps: []CalibrationStep{step(0.1, ms(0.2)), step(0.05, ms(0.3)), step(0.03, ms(0.5), ms(40))},
			held:  []bool{true, true, false},
			want:  0.05,
		},
		{
			name:  "slower until one holds",
			steps: []CalibrationStep{step(0.1, ms(6)), step(0.2, ms(12)), step(0.3, ms(2), ms(4))},
			held:  []bool{false, false, true},
			want:  0.3,
		},
		{
			name:  "none holds",
			steps: []CalibrationStep{step(0.5, ms(30)), step(1, ms(60))},
			held:  []bool{false, false},
			want:  1,
		},
		{
			name:  "timers late",
			steps: []CalibrationStep{step(0.1, ms(0.2)), {Scale: 0.05, Wall: stepWall, Sent: 100, Timers: ms(3)}},
			held:  []bool{true, false},
			want:  0.1,
		},
		{
			name:  "nothing sent",
			steps: []CalibrationStep{step(0.1, 0), {Scale: 0.05, Wall: stepWall}},
			held:  []bool{true, false},
			want:  0.1,
		},
	} {
		budget := c.budget
		if budget == 0 {
			budget = 100 * time.Millisecond
		}
		for i := range c.steps {
			c.steps[i].OK = holds(c.steps[:i+1], i, budget, tail)
			if c.steps[i].OK != c.held[i] {
				t.Errorf("%s: step %d (scale %g): held %v, want %v", c.name, i, float64(c.steps[i].Scale), c.steps[i].OK, c.held[i])
			}
		}
		// Calibrate judges a step before it tries the next; a faster
		// step tried after it must not change its verdict.
		for i := range c.steps {
			if i+1 < len(c.steps) && c.steps[i+1].Scale < c.steps[i].Scale {
				if got := holds(c.steps, i, budget, tail); got != c.held[i] {
					t.Errorf("%s: step %d (scale %g) judged with the faster steps after it: held %v, want %v", c.name, i, float64(c.steps[i].Scale), got, c.held[i])
				}
			}
		}
		if got := chosen(c.steps, c.floor); got != c.want {
			t.Errorf("%s: chosen %g, want %g", c.name, got, c.want)
		}
	}
}

// TestFloorScale: the floor gives a run minWallBudget of wall time at
// least, rounded to a nice scale.
func TestFloorScale(t *testing.T) {
	for _, c := range []struct {
		budget time.Duration
		want   float64
	}{
		{100 * time.Millisecond, 0.1}, // stock-balance: p99 < 1s
		{time.Second, 0.01},
		{30 * time.Millisecond, 0.5}, // 0.333 rounded up
		{5 * time.Millisecond, 1},
		{0, 1},
	} {
		if got := floorScale(c.budget); got != c.want {
			t.Errorf("floorScale(%v) = %g, want %g", c.budget, got, c.want)
		}
	}
}
