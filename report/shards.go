package report

import (
	"errors"
	"fmt"
	"strings"
)

// ShardInfo is which shard of a run a results.json is: Index from 0 of
// Count.
type ShardInfo struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// String returns the shard as --shard takes it, "1/3".
func (s ShardInfo) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// ErrNotOneRun is wrapped by CheckShards when its inputs are not the
// results of one run.
var ErrNotOneRun = errors.New("not shards of one run")

// CheckShards reports whether rs, read from names (one per result), may be
// merged into the results of one run, before MergeResults merges them.
//
// Shards (results with a Shard) must all be shards of one run: the same
// RunID and shard count, every index from 0 to count-1 exactly once (force
// lets shards be missing, never doubled or of another run); the error names
// the run or shard that differs, the shard given twice (and both files), or
// the shards missing. Results without a Shard are copies of
// one run played on several machines; they must have the same engine and
// different seeds (copies with one seed send the same requests, so merging
// them counts each twice) unless force. Shards and copies do not mix. One
// result passes, unless it is one shard of several and not force.
func CheckShards(rs []*Results, names []string, force bool) error {
	if len(rs) == 0 || len(rs) == 1 && (rs[0].Shard == nil || rs[0].Shard.Count == 1 || force) {
		return nil
	}
	name := func(i int) string {
		if i < len(names) {
			return names[i]
		}
		return fmt.Sprintf("results %d", i+1)
	}
	var shards, copies []int
	for i, r := range rs {
		if r.Shard != nil {
			shards = append(shards, i)
		} else {
			copies = append(copies, i)
		}
	}
	if len(shards) > 0 && len(copies) > 0 {
		return fmt.Errorf("merging results: %s is shard %s of run %s but %s is no shard: %w", name(shards[0]), rs[shards[0]].Shard, rs[shards[0]].RunID, name(copies[0]), ErrNotOneRun)
	}
	first := rs[0]
	for i, r := range rs[1:] {
		if r.Scenario != first.Scenario {
			return fmt.Errorf("merging results: %s is scenario %q, %s is %q: %w", name(i+1), r.Scenario, name(0), first.Scenario, ErrNotOneRun)
		}
	}
	if len(copies) > 0 {
		if force {
			return nil
		}
		for i, r := range rs[1:] {
			if r.Engine != first.Engine {
				return fmt.Errorf("merging results: %s was played by the %s engine, %s by %s: %w (merge them anyway with --force)", name(i+1), r.Engine, name(0), first.Engine, ErrNotOneRun)
			}
		}
		seen := map[uint64]int{}
		for i, r := range rs {
			if j, dup := seen[r.Seed]; dup {
				return fmt.Errorf("merging results: %s and %s have the same seed %d, so they sent the same requests and merging counts each twice: %w (play each copy with its own --set seed=N, give each its --shard I/N, or merge anyway with --force)", name(j), name(i), r.Seed, ErrNotOneRun)
			}
			seen[r.Seed] = i
		}
		return nil
	}
	count := first.Shard.Count
	byIndex := make(map[int]int, len(rs))
	for i, r := range rs {
		switch {
		case r.RunID != first.RunID:
			return fmt.Errorf("merging results: %s is of run %q, %s of run %q: %w", name(i), r.RunID, name(0), first.RunID, ErrNotOneRun)
		case r.Shard.Count != count:
			return fmt.Errorf("merging results: %s is shard %s, %s is shard %s: the run was split into one number of shards: %w", name(i), r.Shard, name(0), first.Shard, ErrNotOneRun)
		case r.Shard.Index < 0 || r.Shard.Index >= count:
			return fmt.Errorf("merging results: %s is shard %s, which no run of %d shards has", name(i), r.Shard, count)
		case r.Engine != first.Engine:
			return fmt.Errorf("merging results: %s was played by the %s engine, %s by %s: %w", name(i), r.Engine, name(0), first.Engine, ErrNotOneRun)
		}
		if j, dup := byIndex[r.Shard.Index]; dup {
			return fmt.Errorf("merging results: shard %s of run %s is given twice: %s and %s", r.Shard, first.RunID, name(j), name(i))
		}
		byIndex[r.Shard.Index] = i
	}
	var missing []string
	for k := range count {
		if _, ok := byIndex[k]; !ok {
			missing = append(missing, ShardInfo{k, count}.String())
		}
	}
	if len(missing) > 0 && !force {
		return fmt.Errorf("merging results: run %s lacks shard %s of %d (give every shard's results.json, or merge what there is with --force)", first.RunID, strings.Join(missing, ", "), count)
	}
	return nil
}
