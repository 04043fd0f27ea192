package report

import (
	"fmt"
	"math"
	"strings"

	"stampede/scenarios"
)

// This file chooses a comparison's recommendation by the scenario's
// objective (scenarios.Recommend): which group's SLOs a point must pass,
// and which of those points to prefer.

// Objective says in words what a recommendation optimised.
func Objective(obj scenarios.Recommend) string {
	who := "every group with an SLO"
	if obj.Protect != "" {
		who = obj.Protect
	}
	switch obj.Prefer {
	case scenarios.PreferStrictest:
		return "protect " + who + "; prefer the strictest setting"
	case scenarios.PreferLoosest:
		return "protect " + who + "; prefer the loosest setting"
	}
	return "protect " + who + "; prefer the widest margin to a failing point"
}

// protects reports whether p passes every SLO of the protected group (every
// SLO when obj protects every group).
func protects(p Point, obj scenarios.Recommend) bool {
	if obj.Protect == "" {
		return p.Passed
	}
	seen := false
	for _, s := range p.SLO {
		if s.Group == obj.Protect {
			seen = true
			if !s.Pass {
				return false
			}
		}
	}
	return seen || p.Passed
}

// protectedSLOs returns p's SLOs of the protected group.
func protectedSLOs(p Point, obj scenarios.Recommend) []SLOResult {
	var out []SLOResult
	for _, s := range p.SLO {
		if obj.Protect == "" || s.Group == obj.Protect {
			out = append(out, s)
		}
	}
	return out
}

// RecommendFor chooses among points by obj. A point qualifies when it
// passes every SLO of the protected group; when none does, the
// recommendation is the closest point (recommendClosest). Among the
// qualifying points, strictest takes the first in the order of the swept
// value (off, no limit, last), loosest the last, and the default the one
// farthest, in steps along that order, from a point that does not qualify,
// then the one with the most headroom to its SLOs, then the stricter. The
// reason states the objective and, for the default, the margin: which
// failing point is nearest and how far.
func RecommendFor(axis Names, points []Point, obj scenarios.Recommend) Recommendation {
	if len(points) == 0 {
		return Recommendation{Reason: "there are no points to compare", Objective: Objective(obj)}
	}
	order := valueOrder(axis, points)
	pos := make([]int, len(points))
	for k, i := range order {
		pos[i] = k
	}
	var ok, failing []int
	for _, i := range order {
		if protects(points[i], obj) {
			ok = append(ok, i)
		} else {
			failing = append(failing, i)
		}
	}
	if len(ok) == 0 {
		r := recommendClosest(axis, points)
		r.Objective = Objective(obj)
		return r
	}
	headroom := func(i int) float64 {
		h := math.Inf(1)
		for _, s := range protectedSLOs(points[i], obj) {
			h = math.Min(h, margin(s))
		}
		return h
	}
	nearest := func(i int) (steps, at int) {
		steps, at = math.MaxInt, -1
		for _, j := range failing {
			if d := abs(pos[i] - pos[j]); d < steps {
				steps, at = d, j
			}
		}
		return steps, at
	}
	best := ok[0]
	switch obj.Prefer {
	case scenarios.PreferStrictest:
	case scenarios.PreferLoosest:
		best = ok[len(ok)-1]
	default:
		bs, _ := nearest(best)
		for _, i := range ok[1:] {
			s, _ := nearest(i)
			if s > bs || s == bs && headroom(i) > headroom(best) {
				best, bs = i, s
			}
		}
	}
	p := points[best]
	label := pointLabel(axis, p.Value)
	var b strings.Builder
	who := "every SLO"
	if obj.Protect != "" {
		who = "every SLO of " + obj.Protect
	}
	fmt.Fprintf(&b, "%s passes %s", label, who)
	if slos := protectedSLOs(p, obj); len(slos) > 0 {
		fmt.Fprintf(&b, " (%s)", sloFigures(slos, 3))
	}
	switch obj.Prefer {
	case scenarios.PreferStrictest:
		fmt.Fprintf(&b, "; the strictest of %d such points", len(ok))
	case scenarios.PreferLoosest:
		fmt.Fprintf(&b, "; the loosest of %d such points", len(ok))
	default:
		steps, at := nearest(best)
		if at < 0 {
			fmt.Fprintf(&b, "; every point does, and it has the most headroom")
		} else {
			var failed []SLOResult
			for _, s := range protectedSLOs(points[at], obj) {
				if !s.Pass {
					failed = append(failed, s)
				}
			}
			noun := "steps"
			if steps == 1 {
				noun = "step"
			}
			fmt.Fprintf(&b, "; margin: the nearest failing point, %s, is %d %s away", pointLabel(axis, points[at].Value), steps, noun)
			if len(failed) > 0 {
				fmt.Fprintf(&b, " (%s)", missFigures(failed, 2))
			}
		}
	}
	return Recommendation{Value: p.Value, Reason: b.String(), Passed: p.Passed, Objective: Objective(obj)}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
