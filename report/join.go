package report

import (
	"fmt"
	"slices"
	"strings"
)

// JoinComparisons joins the comparisons of the shards of one sweep (from
// names, one per comparison) into the comparison a single compare would
// have written: the points in the sweep's order, the recommendation chosen
// again over all of them. The shards must be of one run (RunID), split into
// one number of shards, every shard given once, and together hold every
// point of the sweep once; the error says which shard or point is missing
// or given twice. Results paths are kept as the shards wrote them, relative
// to each shard's directory.
func JoinComparisons(cs []*Comparison, names []string) (*Comparison, error) {
	if len(cs) == 0 {
		return nil, fmt.Errorf("joining comparisons: nothing to join")
	}
	name := func(i int) string {
		if i < len(names) {
			return names[i]
		}
		return fmt.Sprintf("comparison %d", i+1)
	}
	first := cs[0]
	byShard := map[int]int{}
	for i, c := range cs {
		switch {
		case c.Shard == nil:
			return nil, fmt.Errorf("joining comparisons: %s is no shard of a sweep (compare --shard I/N writes shards)", name(i))
		case c.RunID != first.RunID:
			return nil, fmt.Errorf("joining comparisons: %s is of run %q, %s of run %q: %w", name(i), c.RunID, name(0), first.RunID, ErrNotOneRun)
		case c.Shard.Count != first.Shard.Count || c.GridPoints != first.GridPoints:
			return nil, fmt.Errorf("joining comparisons: %s is shard %s of %d points, %s shard %s of %d: %w", name(i), c.Shard, c.GridPoints, name(0), first.Shard, first.GridPoints, ErrNotOneRun)
		case c.Scenario != first.Scenario || !slices.Equal(c.Axis, first.Axis):
			return nil, fmt.Errorf("joining comparisons: %s sweeps %s of %s, %s sweeps %s of %s: %w", name(i), strings.Join(c.Axis, ","), c.Scenario, name(0), strings.Join(first.Axis, ","), first.Scenario, ErrNotOneRun)
		case len(c.PointIndex) != len(c.Points):
			return nil, fmt.Errorf("joining comparisons: %s has %d points and %d point indexes", name(i), len(c.Points), len(c.PointIndex))
		}
		if j, dup := byShard[c.Shard.Index]; dup {
			return nil, fmt.Errorf("joining comparisons: shard %s of run %s is given twice: %s and %s", c.Shard, first.RunID, name(j), name(i))
		}
		byShard[c.Shard.Index] = i
	}
	var missing []string
	for k := range first.Shard.Count {
		if _, ok := byShard[k]; !ok {
			missing = append(missing, ShardInfo{k, first.Shard.Count}.String())
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("joining comparisons: run %s lacks shard %s (give every shard's directory)", first.RunID, strings.Join(missing, ", "))
	}
	points := make([]*Point, first.GridPoints)
	from := map[int]int{}
	for i, c := range cs {
		for j, pi := range c.PointIndex {
			if pi < 0 || pi >= len(points) {
				return nil, fmt.Errorf("joining comparisons: %s has point %d of a sweep of %d", name(i), pi, len(points))
			}
			if points[pi] != nil {
				return nil, fmt.Errorf("joining comparisons: point %d (%s) is in %s and %s", pi, strings.Join(c.Points[j].Value, ","), name(from[pi]), name(i))
			}
			points[pi] = &c.Points[j]
			from[pi] = i
		}
	}
	var joined []Point
	var lacking []string
	for pi, p := range points {
		if p == nil {
			lacking = append(lacking, fmt.Sprint(pi))
			continue
		}
		joined = append(joined, *p)
	}
	if len(lacking) > 0 {
		return nil, fmt.Errorf("joining comparisons: run %s lacks point %s of %d (a shard interrupted before its last point?)", first.RunID, strings.Join(lacking, ", "), len(points))
	}
	return NewComparison(first.Scenario, slices.Clone(first.Axis), joined), nil
}

// PointSources returns, for a joined comparison, which of cs each of its
// points came from (by PointIndex), so that a caller can find the point's
// results under that shard's directory.
func PointSources(cs []*Comparison) map[int]int {
	out := map[int]int{}
	for i, c := range cs {
		for _, pi := range c.PointIndex {
			out[pi] = i
		}
	}
	return out
}
