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
}

// NewPoint summarises r, the results of the run at value, written at
// resultsPath (relative to the comparison's directory).
func NewPoint(value Names, resultsPath string, r *Results) Point {
	return Point{Value: value, Results: resultsPath, Groups: r.Groups, SLO: r.SLO, Passed: r.Passed(),
		Inconclusive: r.Validity != nil && !r.Validity.Conclusive}
}

// NewComparison returns the comparison of points along axis, with its
// recommendation.
func NewComparison(scenario string, axis Names, points []Point) *Comparison {
	return &Comparison{Schema: ComparisonSchema, Scenario: scenario, Axis: axis, Points: points, Recommendation: Recommend(axis, points)}
}

// NoisiestGroup returns the group the limits are about: the one whose
// requests were rejected the most, as the sum over points of the share of
// its requests rejected (a share, so a group of 249 quiet tenants does not
// outweigh one loud one). When no point rejected anything, it is the group
// that sent the most requests per tenant over all points. Ties go to the
// group listed first. It returns "" when the points have no groups.
func NoisiestGroup(points []Point) string {
	var names []string
	share := map[string]float64{}
	perTenant := map[string]float64{}
	for _, p := range points {
		for _, g := range p.Groups {
			if _, ok := share[g.Name]; !ok {
				names = append(names, g.Name)
				share[g.Name] = 0
			}
			if g.Requests > 0 {
				share[g.Name] += float64(g.Rejected) / float64(g.Requests)
			}
			perTenant[g.Name] += float64(g.Requests) / float64(max(g.Tenants, 1))
		}
	}
	best := ""
	for _, n := range names {
		if best == "" || share[n] > share[best] {
			best = n
		}
	}
	if best != "" && share[best] == 0 {
		best = ""
		for _, n := range names {
			if best == "" || perTenant[n] > perTenant[best] {
				best = n
			}
		}
	}
	return best
}

// Recommend chooses among points. Among the points that pass every SLO it
// takes the one that serves the noisiest group (NoisiestGroup) best: the
// highest ok rate, then the lowest p99, then the earlier point. When no point
// passes, it names the SLOs that fail at every point and takes the point
// that comes closest: the fewest failed SLOs, then the smallest sum of
// relative misses (SLOResult.Miss), then the earlier point. Reason is one
// sentence with the figures; values are labelled with the last element of
// the axis path (per_key=4).
func Recommend(axis Names, points []Point) Recommendation {
	if len(points) == 0 {
		return Recommendation{Reason: "there are no points to compare"}
	}
	noisy := NoisiestGroup(points)
	var passing []int
	for i, p := range points {
		if p.Passed {
			passing = append(passing, i)
		}
	}
	if len(passing) > 0 {
		return recommendPassing(axis, points, passing, noisy)
	}
	return recommendClosest(axis, points)
}

func recommendPassing(axis Names, points []Point, passing []int, noisy string) Recommendation {
	best := passing[0]
	for _, i := range passing[1:] {
		if compareService(groupOf(points[i], noisy), groupOf(points[best], noisy)) > 0 {
			best = i
		}
	}
	// p99 is worth saying when it decided: another passing point has the
	// same ok rate.
	byP99 := false
	bg := groupOf(points[best], noisy)
	for _, i := range passing {
		if i != best && sameOKRate(groupOf(points[i], noisy), bg) {
			byP99 = true
		}
	}
	p := points[best]
	label := pointLabel(axis, p.Value)
	var b strings.Builder
	if len(passing) == 1 {
		fmt.Fprintf(&b, "%s is the only point that passes every SLO", label)
	} else {
		fmt.Fprintf(&b, "%s passes every SLO", label)
	}
	if len(p.SLO) > 0 {
		fmt.Fprintf(&b, " (%s)", sloFigures(p.SLO, 3))
	}
	if noisy != "" && bg != nil {
		serve := fmt.Sprintf("%d/%d ok", bg.OK, bg.Requests)
		if byP99 && bg.Latency.Count > 0 {
			serve += ", p99 " + formatMs(bg.Latency.P99)
		}
		if len(passing) == 1 {
			fmt.Fprintf(&b, " and serves %s %s", noisy, serve)
		} else {
			fmt.Fprintf(&b, " and serves %s best among passing points (%s)", noisy, serve)
		}
	}
	return Recommendation{Value: p.Value, Reason: b.String(), Passed: true}
}

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

// compareService compares how well two points serve a group: > 0 when a is
// better (higher ok rate, then lower p99; a group without ok responses has
// the worst p99).
func compareService(a, b *GroupResult) int {
	ra, rb := okRate(a), okRate(b)
	if ra != rb {
		if ra > rb {
			return 1
		}
		return -1
	}
	pa, pb := p99Of(a), p99Of(b)
	switch {
	case pa < pb:
		return 1
	case pa > pb:
		return -1
	}
	return 0
}

func sameOKRate(a, b *GroupResult) bool { return okRate(a) == okRate(b) }

func okRate(g *GroupResult) float64 {
	if g == nil || g.Requests == 0 {
		return 0
	}
	return float64(g.OK) / float64(g.Requests)
}

func p99Of(g *GroupResult) float64 {
	if g == nil || g.Latency.Count == 0 {
		return math.Inf(1)
	}
	return g.Latency.P99
}

func groupOf(p Point, name string) *GroupResult {
	for i := range p.Groups {
		if p.Groups[i].Name == name {
			return &p.Groups[i]
		}
	}
	return nil
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
