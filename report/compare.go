package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"stampede/scenarios"
)

// Comparison is comparison.json (schema stampede.comparison/v1): one
// scenario played once per value of the swept settings, and which value to
// use.
type Comparison struct {
	Schema         string         `json:"schema"`
	Scenario       string         `json:"scenario"`
	Axis           Names          `json:"axis"` // the swept --set paths: a string for one axis, a list for a grid
	Points         []Point        `json:"points"`
	Recommendation Recommendation `json:"recommendation"`

	// A shard of a sweep (compare --shard I/N) plays some of its points;
	// JoinComparisons joins the shards into the comparison one compare
	// would write. RunID and Shard are as in Results; PointIndex is each
	// point's place in the whole sweep, and GridPoints the whole sweep's
	// number of points. All are empty in a whole comparison.
	RunID      string     `json:"run_id,omitempty"`
	Shard      *ShardInfo `json:"shard,omitempty"`
	PointIndex []int      `json:"point_index,omitempty"`
	GridPoints int        `json:"grid_points,omitempty"`

	// Goal is the scenario's recommend: block the recommendation was chosen
	// by, so that joining a sweep's shards chooses again by it; nil is the
	// default objective.
	Goal *Goal `json:"recommend,omitempty"`
}

// Goal is a scenario's recommend: block as comparison.json records it.
type Goal struct {
	Protect string `json:"protect,omitempty"`
	Prefer  string `json:"prefer,omitempty"`
}

// Recommend returns g as the scenario states it; a nil Goal is the default.
func (g *Goal) Recommend() scenarios.Recommend {
	if g == nil {
		return scenarios.Recommend{}
	}
	return scenarios.Recommend{Protect: g.Protect, Prefer: g.Prefer}
}

// Names is one name or several. JSON writes one as a plain string and
// several (or none) as a list, and reads either.
type Names []string

// MarshalJSON writes a single name as a string and anything else as a list.
func (n Names) MarshalJSON() ([]byte, error) {
	if len(n) == 1 {
		return json.Marshal(n[0])
	}
	if n == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]string(n))
}

// UnmarshalJSON reads a string or a list of strings.
func (n *Names) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*n = Names{s}
		return nil
	}
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("want a string or a list of strings: %w", err)
	}
	*n = l
	return nil
}

// Point is one setting of the swept values and what the run at it gave.
type Point struct {
	Value   Names         `json:"value"`   // one value per axis
	Results string        `json:"results"` // that point's results.json, relative to the comparison's directory
	Groups  []GroupResult `json:"groups"`
	SLO     []SLOResult   `json:"slo"`
	Passed  bool          `json:"passed"` // every SLO passed
	// Inconclusive marks a live point whose run could not play the
	// scenario faithfully (Results.Validity): kept out of the
	// recommendation.
	Inconclusive bool `json:"inconclusive,omitempty"`
}

// Recommendation is the point to use and why, in one sentence.
type Recommendation struct {
	Value  Names  `json:"value"`  // nil when there are no points
	Reason string `json:"reason"` // with the figures that decided it
	Passed bool   `json:"passed"` // the point passes every SLO; false means "closest", not "good"
	// Objective is what the choice optimised, in words (Objective); empty
	// in files written before it was said.
	Objective string `json:"objective,omitempty"`
}

// NewPoint summarises r, the results of the run at value, written at
// resultsPath (relative to the comparison's directory).
func NewPoint(value Names, resultsPath string, r *Results) Point {
	return Point{Value: value, Results: resultsPath, Groups: r.Groups, SLO: r.SLO, Passed: r.Passed(),
		Inconclusive: r.Validity != nil && !r.Validity.Conclusive}
}

// NewComparisonFor returns the comparison of points along axis, with the
// recommendation chosen by the scenario's objective (RecommendFor; the zero
// objective is the default).
func NewComparisonFor(scenario string, axis Names, points []Point, obj scenarios.Recommend) *Comparison {
	c := &Comparison{Schema: ComparisonSchema, Scenario: scenario, Axis: axis, Points: points, Recommendation: RecommendFor(axis, points, obj)}
	if obj != (scenarios.Recommend{}) {
		c.Goal = &Goal{Protect: obj.Protect, Prefer: obj.Prefer}
	}
	return c
}

// recommendClosest is the recommendation when no point passes: it names
// the SLOs that fail at every point and takes the point that comes closest:
// the fewest failed SLOs, then the smallest sum of relative misses
// (SLOResult.Miss), then the earlier point. Reason is one sentence with the
// figures; values are labelled with the last element of the axis path
// (per_key=4).
func recommendClosest(axis Names, points []Point) Recommendation {
	// SLOs failing at every point, in the order of the first point.
	var everywhere []string
	for _, s := range points[0].SLO {
		all := true
		for _, p := range points {
			if v, ok := sloNamed(p.SLO, s.Name); !ok || v.Pass {
				all = false
				break
			}
		}
		if all {
			everywhere = append(everywhere, s.Name)
		}
	}
	best, bestFailed, bestMiss := 0, math.MaxInt, math.Inf(1)
	for i, p := range points {
		failed, miss := 0, 0.0
		for _, s := range p.SLO {
			if !s.Pass {
				failed++
				miss += s.Miss()
			}
		}
		if failed < bestFailed || (failed == bestFailed && miss < bestMiss) {
			best, bestFailed, bestMiss = i, failed, miss
		}
	}
	p := points[best]
	var b strings.Builder
	b.WriteString("no point passes every SLO: ")
	switch len(everywhere) {
	case 0:
		b.WriteString("each fails a different one")
	case 1:
		fmt.Fprintf(&b, "%s fails at every point", everywhere[0])
	default:
		fmt.Fprintf(&b, "%s fail at every point", strings.Join(everywhere, " and "))
	}
	var failed []SLOResult
	for _, s := range p.SLO {
		if !s.Pass {
			failed = append(failed, s)
		}
	}
	fmt.Fprintf(&b, "; %s comes closest (%d of %d SLOs failed: %s)", pointLabel(axis, p.Value), len(failed), len(p.SLO), missFigures(failed, 3))
	return Recommendation{Value: p.Value, Reason: b.String(), Passed: false}
}

func sloNamed(ss []SLOResult, name string) (SLOResult, bool) {
	for _, s := range ss {
		if s.Name == name {
			return s, true
		}
	}
	return SLOResult{}, false
}

// pointLabel writes a point's values as path=value, by the last element of
// each axis path.
func pointLabel(axis Names, value Names) string {
	parts := make([]string, len(value))
	for i, v := range value {
		if i < len(axis) {
			a := axis[i]
			if j := strings.LastIndexByte(a, '.'); j >= 0 {
				a = a[j+1:]
			}
			parts[i] = a + "=" + v
		} else {
			parts[i] = v
		}
	}
	return strings.Join(parts, ", ")
}

// sloFigure writes a verdict as "other-sites p99 212 ms < 1 s".
func sloFigure(s SLOResult) string {
	if s.Reason != "" {
		return fmt.Sprintf("%s %s: %s", s.Group, s.Metric, s.Reason)
	}
	return fmt.Sprintf("%s %s %s %s %s", s.Group, s.Metric, formatMetric(s.Metric, s.Value), s.Op, formatMetric(s.Metric, s.Threshold))
}

// sloFigures lists up to n passing verdicts, the closest to failing first.
func sloFigures(ss []SLOResult, n int) string {
	ss = append([]SLOResult(nil), ss...)
	sort.SliceStable(ss, func(i, j int) bool { return margin(ss[i]) < margin(ss[j]) })
	var parts []string
	for _, s := range ss[:min(n, len(ss))] {
		parts = append(parts, sloFigure(s))
	}
	if len(ss) > n {
		parts = append(parts, fmt.Sprintf("and %d more", len(ss)-n))
	}
	return strings.Join(parts, ", ")
}

// margin is how far a passing verdict is from its threshold, relative to it.
func margin(s SLOResult) float64 {
	d := s.Threshold - s.Value
	if s.Op == ">" || s.Op == ">=" {
		d = -d
	}
	if s.Threshold != 0 {
		d /= math.Abs(s.Threshold)
	}
	return d
}

// missFigures lists up to n failed verdicts, the worst miss first, with how
// far each misses.
func missFigures(ss []SLOResult, n int) string {
	ss = append([]SLOResult(nil), ss...)
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].Miss() > ss[j].Miss() })
	var parts []string
	for _, s := range ss[:min(n, len(ss))] {
		if s.Reason != "" {
			parts = append(parts, sloFigure(s))
			continue
		}
		word := "over"
		if s.Op == ">" || s.Op == ">=" {
			word = "under"
		}
		parts = append(parts, fmt.Sprintf("%s %s %s vs %s %s, %s %s", s.Group, s.Metric, formatMetric(s.Metric, s.Value), s.Op,
			formatMetric(s.Metric, s.Threshold), formatPercent(s.Miss()), word))
	}
	if len(ss) > n {
		parts = append(parts, fmt.Sprintf("and %d more", len(ss)-n))
	}
	return strings.Join(parts, "; ")
}

// WriteComparison writes c as indented JSON, deterministically.
func WriteComparison(w io.Writer, c *Comparison) error {
	cc := *c
	if cc.Schema == "" {
		cc.Schema = ComparisonSchema
	}
	if cc.Axis == nil {
		cc.Axis = Names{}
	}
	cc.Points = append([]Point{}, c.Points...)
	for i := range cc.Points {
		p := &cc.Points[i]
		p.Groups = append([]GroupResult{}, p.Groups...)
		for j := range p.Groups {
			p.Groups[j].Counts = normCounts(p.Groups[j].Counts)
		}
		p.SLO = append([]SLOResult{}, p.SLO...)
		if p.Value == nil {
			p.Value = Names{}
		}
	}
	b, err := json.MarshalIndent(&cc, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding comparison of %q: %w", c.Scenario, err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadComparison reads a comparison.json file and checks its schema.
func ReadComparison(path string) (*Comparison, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading comparison: %w", err)
	}
	var c Comparison
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&c); err != nil {
		return nil, fmt.Errorf("reading comparison %s: %w", path, err)
	}
	if c.Schema != ComparisonSchema {
		return nil, fmt.Errorf("reading comparison %s: schema is %q, want %q", path, c.Schema, ComparisonSchema)
	}
	return &c, nil
}
