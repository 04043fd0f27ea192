package report

import (
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// MergeResults merges the results of shards of one run (the same scenario
// played with the same settings, but for the seed, on several machines) into
// one, exactly: histograms are rebuilt from the snapshots in
// Results.Histograms and merged bucket by bucket; counts, worker time
// (work_s, to the microsecond) and time series are summed; percentiles and
// SLO verdicts are computed again from the merged histograms; nothing is
// averaged.
//
// The merged results list tenants, groups and routes in the order of the
// first shard (with any the first lacks after them); durations are the
// longest shard's; it is interrupted if any shard was. Shards have their own
// backends, so busy_max, queue_max and the backend series are the largest
// any shard saw, and utilization is the busy worker time of all shards over
// their total worker time. Key series keep, per bucket, the most in flight
// any shard saw. The seed, version and command line are the first shard's;
// a seed setting is kept only if every shard had the same. The merged run
// is conclusive only if every shard was (mergeValidity).
//
// Shards of one run (each with its Shard) merge into results with their
// RunID and no Shard; CheckShards says beforehand whether results are the
// shards, or the copies, of one run.
//
// Errors: no results; shards of different scenarios or settings; a shard
// without histograms; an undecodable histogram; different series steps.
// One result is returned as it is, histograms or not.
func MergeResults(rs ...*Results) (*Results, error) {
	if len(rs) == 0 {
		return nil, fmt.Errorf("merging results: nothing to merge")
	}
	first := rs[0]
	if len(rs) == 1 {
		return first, nil
	}
	for i, r := range rs {
		if r.Scenario != first.Scenario {
			return nil, fmt.Errorf("merging results: shard %d is scenario %q, shard 1 is %q: not shards of one run", i+1, r.Scenario, first.Scenario)
		}
		if !maps.Equal(withoutSeed(r.Settings), withoutSeed(first.Settings)) {
			return nil, fmt.Errorf("merging results: shard %d has settings %s, shard 1 has %s: not shards of one run", i+1, settingsString(r.Settings), settingsString(first.Settings))
		}
		if r.Histograms == nil || len(r.Histograms.Tenants) != len(r.Tenants) || len(r.Histograms.Routes) != len(r.Routes) {
			return nil, fmt.Errorf("merging results: shard %d (%s) carries no histogram for each tenant and route, so it cannot be merged exactly", i+1, r.Scenario)
		}
		if (r.Series == nil) != (first.Series == nil) || (r.Series != nil && r.Series.Step != first.Series.Step) {
			return nil, fmt.Errorf("merging results: shard %d has a different series step from shard 1", i+1)
		}
	}
	m := &Results{
		Schema:      Schema,
		Scenario:    first.Scenario,
		Engine:      first.Engine,
		TimeScale:   first.TimeScale,
		Settings:    maps.Clone(nonNil(first.Settings)),
		Seed:        first.Seed,
		RunID:       first.RunID,
		StartAt:     first.StartAt,
		Version:     first.Version,
		CommandLine: first.CommandLine,
		Histograms:  &Snapshots{},
	}
	for _, r := range rs[1:] {
		if r.Settings[seedSetting] != first.Settings[seedSetting] {
			delete(m.Settings, seedSetting) // no one seed made the merged run
		}
	}
	var engines []string
	var busy, capacity float64
	tally := histTally{} // by kind and name
	var groups groupHists
	var tenantOrder, routeOrder, groupOrder []string
	groupTenants := map[string]int{}
	totals := Counts{}
	for i, r := range rs {
		if !containsString(engines, r.Engine) {
			engines = append(engines, r.Engine)
		}
		m.ModelDurationS = max(m.ModelDurationS, r.ModelDurationS)
		m.WallDurationS = max(m.WallDurationS, r.WallDurationS)
		if r.StartUnixMS != 0 && (m.StartUnixMS == 0 || r.StartUnixMS < m.StartUnixMS) {
			m.StartUnixMS = r.StartUnixMS // the shards' log starts with the first
		}
		m.Interrupted = m.Interrupted || r.Interrupted
		m.Shards += max(r.Shards, 1)
		sumInto(&totals, r.Totals)

		m.Backend.Workers = max(m.Backend.Workers, r.Backend.Workers)
		m.Backend.BusyMax = max(m.Backend.BusyMax, r.Backend.BusyMax)
		m.Backend.QueueMax = max(m.Backend.QueueMax, r.Backend.QueueMax)
		c := float64(r.Backend.Workers) * r.ModelDurationS
		busy += r.Backend.Utilization * c
		capacity += c

		for j, t := range r.Tenants {
			k := "t\x00" + t.Group + "\x00" + t.Name
			mh, err := tally.get(k, r.Histograms.Tenants[j])
			if err != nil {
				return nil, fmt.Errorf("merging results: shard %d, tenant %s: %w", i+1, t.Name, err)
			}
			if mh.n == 0 {
				tenantOrder = append(tenantOrder, k)
				mh.tenant = TenantResult{Name: t.Name, Group: t.Group, Host: t.Host}
			}
			mh.n++
			sumInto(&mh.tenant.Counts, t.Counts)
			mh.tenant.WorkS = round(mh.tenant.WorkS+t.WorkS, 6)
		}
		for j, rt := range r.Routes {
			k := "r\x00" + rt.Name
			mh, err := tally.get(k, r.Histograms.Routes[j])
			if err != nil {
				return nil, fmt.Errorf("merging results: shard %d, route %s: %w", i+1, rt.Name, err)
			}
			if mh.n == 0 {
				routeOrder = append(routeOrder, k)
				mh.route = RouteResult{Name: rt.Name}
			}
			mh.n++
			sumInto(&mh.route.Counts, rt.Counts)
		}
		for _, g := range r.Groups {
			k := "g\x00" + g.Name
			mh := tally[k]
			if mh == nil {
				mh = &mergedHist{group: GroupResult{Name: g.Name}}
				tally[k] = mh
				groupOrder = append(groupOrder, k)
				groups.group(g.Name)
			}
			sumInto(&mh.group.Counts, g.Counts)
			mh.group.WorkS = round(mh.group.WorkS+g.WorkS, 6)
			groupTenants[g.Name] = max(groupTenants[g.Name], g.Tenants)
		}
	}
	m.Engine = strings.Join(engines, "+")
	if capacity > 0 {
		m.Backend.Utilization = round(busy/capacity, 4)
	}
	m.Totals = totals

	var enc v2Encoder
	perGroup := map[string]int{}
	for _, k := range tenantOrder {
		mh := tally[k]
		mh.tenant.Latency = latencyOf(mh.h)
		m.Tenants = append(m.Tenants, mh.tenant)
		m.Histograms.Tenants = append(m.Histograms.Tenants, enc.encode(mh.h))
		gk := "g\x00" + mh.tenant.Group
		if tally[gk] == nil {
			tally[gk] = &mergedHist{group: GroupResult{Name: mh.tenant.Group}}
			groupOrder = append(groupOrder, gk)
		}
		groups.add(groups.group(mh.tenant.Group), mh.h)
		perGroup[mh.tenant.Group]++
	}
	for _, k := range groupOrder {
		g := tally[k]
		g.group.Tenants = max(groupTenants[g.group.Name], perGroup[g.group.Name])
		g.group.Latency = latencyOf(groups.hists[groups.group(g.group.Name)])
		m.Groups = append(m.Groups, g.group)
	}
	m.hists = &groups
	for _, k := range routeOrder {
		mh := tally[k]
		mh.route.Latency = latencyOf(mh.h)
		m.Routes = append(m.Routes, mh.route)
		m.Histograms.Routes = append(m.Histograms.Routes, enc.encode(mh.h))
	}

	if first.Series != nil {
		s, err := mergeSeries(rs)
		if err != nil {
			return nil, err
		}
		m.Series = s
		ivs, err := mergeIntervals(rs, m.Groups)
		if err != nil {
			return nil, err
		}
		m.Histograms.Intervals = ivs
	}

	m.Validity = mergeValidity(rs)
	for _, s := range first.SLO {
		m.SLO = append(m.SLO, evaluateSLO(sloOf(s), m.Groups))
	}
	if m.SLO == nil {
		m.SLO = []SLOResult{}
	}
	return m, nil
}

// mergeValidity combines the shards' validity verdicts: the merged run is
// conclusive only if every shard is; the reasons are every shard's, each
// naming its shard; the suggested time scale is the smallest any shard
// suggests (the one every machine holds); failures the delay cannot explain
// are every shard's; the figures are the worst any shard saw, counts
// summed. Nil when no shard has a verdict (results written before it
// existed).
func mergeValidity(rs []*Results) *Validity {
	var m *Validity
	for i, r := range rs {
		v := r.Validity
		if v == nil {
			continue
		}
		if m == nil {
			m = &Validity{Conclusive: true, Reasons: []string{}}
		}
		m.Conclusive = m.Conclusive && v.Conclusive
		for _, reason := range v.Reasons {
			m.Reasons = append(m.Reasons, fmt.Sprintf("shard %d: %s", i+1, reason))
		}
		if s := v.SuggestedTimeScale; s > 0 && (m.SuggestedTimeScale == 0 || s < m.SuggestedTimeScale) {
			m.SuggestedTimeScale = s
		}
		for _, u := range v.Unexplained {
			if !containsString(m.Unexplained, u) {
				m.Unexplained = append(m.Unexplained, u)
			}
		}
		m.BudgetMS = max(m.BudgetMS, v.BudgetMS)
		m.LatenessP99MS = max(m.LatenessP99MS, v.LatenessP99MS)
		m.LongestStallMS = max(m.LongestStallMS, v.LongestStallMS)
		m.StallsOverBudget += v.StallsOverBudget
		m.TimersP99MS = max(m.TimersP99MS, v.TimersP99MS)
		m.TareDriftMS = max(m.TareDriftMS, v.TareDriftMS)
		m.CPUSteal = max(m.CPUSteal, v.CPUSteal)
		m.CgroupThrottled += v.CgroupThrottled
		m.CgroupThrottledWallMS += v.CgroupThrottledWallMS
		m.CPUPerRequestUS = max(m.CPUPerRequestUS, v.CPUPerRequestUS)
	}
	return m
}

// mergedHist accumulates one tenant, route or group across shards.
type mergedHist struct {
	n      int
	h      *hdr.PackedHistogram
	tenant TenantResult
	route  RouteResult
	group  GroupResult
}

type histTally map[string]*mergedHist

// get returns the accumulator for key k with the snapshot enc merged in.
func (t histTally) get(k, enc string) (*mergedHist, error) {
	h, err := decode(enc)
	if err != nil {
		return nil, fmt.Errorf("decoding its histogram: %w", err)
	}
	mh := t[k]
	if mh == nil {
		mh = &mergedHist{h: newHist()}
		t[k] = mh
	}
	if dropped := mh.h.Merge(h); dropped != 0 {
		return nil, fmt.Errorf("its histogram does not fit the recorder's range (%d values dropped)", dropped)
	}
	return mh, nil
}

func sumInto(dst *Counts, c Counts) {
	dst.Requests += c.Requests
	dst.OK += c.OK
	dst.Rejected += c.Rejected
	dst.BackendErrors += c.BackendErrors
	dst.GatewayTimeouts += c.GatewayTimeouts
	dst.ClientTimeouts += c.ClientTimeouts
	dst.Dropped += c.Dropped
	dst.Errors += c.Errors
	if dst.Status == nil {
		dst.Status = map[string]uint64{}
	}
	for k, n := range c.Status {
		dst.Status[k] += n
	}
}

// mergeSeries sums the group series and keeps the largest backend and key
// samples per bucket.
func mergeSeries(rs []*Results) (*Series, error) {
	first := rs[0].Series
	s := &Series{Step: first.Step, Limit: first.Limit, Groups: []GroupSeries{}, Backend: []BackendSample{}, Keys: []KeySeries{}}
	idx := map[string]int{}
	n := 0
	backend := map[int64]*BackendSample{}
	type keyAcc struct {
		peak int
		sum  int
		at   map[int64]int
	}
	keys := map[string]*keyAcc{}
	for _, r := range rs {
		for _, g := range r.Series.Groups {
			i, ok := idx[g.Name]
			if !ok {
				i = len(s.Groups)
				idx[g.Name] = i
				s.Groups = append(s.Groups, GroupSeries{Name: g.Name})
			}
			dst := &s.Groups[i]
			for len(dst.Counts) < len(g.Counts) {
				dst.Counts = append(dst.Counts, [numOutcomes]uint32{})
			}
			for b := range g.Counts {
				for o, c := range g.Counts[b] {
					dst.Counts[b][o] += c
				}
			}
			n = max(n, len(dst.Counts))
		}
		for _, b := range r.Series.Backend {
			k := millis(b.T)
			if cur := backend[k]; cur != nil {
				cur.Busy = max(cur.Busy, b.Busy)
				cur.Queued = max(cur.Queued, b.Queued)
			} else {
				c := b
				backend[k] = &c
			}
		}
		for _, ks := range r.Series.Keys {
			if len(ks.T) != len(ks.InFlight) {
				return nil, fmt.Errorf("merging results: key %s has %d times and %d counts", ks.Key, len(ks.T), len(ks.InFlight))
			}
			a := keys[ks.Key]
			if a == nil {
				a = &keyAcc{at: map[int64]int{}}
				keys[ks.Key] = a
			}
			for j, t := range ks.T {
				k := millis(t)
				if v, ok := a.at[k]; !ok || ks.InFlight[j] > v {
					a.at[k] = ks.InFlight[j]
				}
			}
		}
	}
	for i := range s.Groups {
		for len(s.Groups[i].Counts) < n {
			s.Groups[i].Counts = append(s.Groups[i].Counts, [numOutcomes]uint32{})
		}
	}
	for _, k := range sortedInt64Keys(backend) {
		s.Backend = append(s.Backend, *backend[k])
	}
	// Every key is reported at the instants any shard sampled keys.
	instants := map[int64]bool{}
	for _, a := range keys {
		for t := range a.at {
			instants[t] = true
		}
	}
	ts := sortedInt64Keys(instants)
	var ranked []*KeySeries
	acc := map[*KeySeries]*keyAcc{}
	for name, a := range keys {
		ks := &KeySeries{Key: name, T: make([]float64, 0, len(ts)), InFlight: make([]int, 0, len(ts))}
		for _, t := range ts {
			v := a.at[t]
			ks.T = append(ks.T, float64(t)/1000)
			ks.InFlight = append(ks.InFlight, v)
			a.peak = max(a.peak, v)
			a.sum += v
		}
		ranked = append(ranked, ks)
		acc[ks] = a
	}
	sort.Slice(ranked, func(i, j int) bool {
		a, b := acc[ranked[i]], acc[ranked[j]]
		if a.peak != b.peak {
			return a.peak > b.peak
		}
		if a.sum != b.sum {
			return a.sum > b.sum
		}
		return ranked[i].Key < ranked[j].Key
	})
	for _, ks := range ranked[:min(KeepKeys, len(ranked))] {
		s.Keys = append(s.Keys, *ks)
	}
	return s, nil
}

// mergeIntervals merges the per-group interval histograms by group and
// bucket.
func mergeIntervals(rs []*Results, groups []GroupResult) ([]IntervalSnapshot, error) {
	type key struct {
		t     int64
		group string
	}
	acc := map[key]*hdr.PackedHistogram{}
	for i, r := range rs {
		for _, iv := range r.Histograms.Intervals {
			h, err := decode(iv.Hist)
			if err != nil {
				return nil, fmt.Errorf("merging results: shard %d, interval of group %s at %gs: %w", i+1, iv.Group, iv.T, err)
			}
			k := key{millis(iv.T), iv.Group}
			if acc[k] == nil {
				acc[k] = newHist()
			}
			acc[k].Merge(h)
		}
	}
	order := map[string]int{}
	for i, g := range groups {
		order[g.Name] = i
	}
	ks := make([]key, 0, len(acc))
	for k := range acc {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].t != ks[j].t {
			return ks[i].t < ks[j].t
		}
		oi, oj := order[ks[i].group], order[ks[j].group]
		if oi != oj {
			return oi < oj
		}
		return ks[i].group < ks[j].group
	})
	var enc v2Encoder
	out := make([]IntervalSnapshot, 0, len(ks))
	for _, k := range ks {
		out = append(out, IntervalSnapshot{Group: k.group, T: float64(k.t) / 1000, Hist: enc.encode(acc[k]), stats: intervalFigures(acc[k])})
	}
	return out, nil
}

func millis(s float64) int64 { return int64(math.Round(s * 1000)) }

func sortedInt64Keys[V any](m map[int64]V) []int64 {
	ks := make([]int64, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}

// seedSetting is the override shards of one run are expected to differ in:
// shards with one seed would send the same requests.
const seedSetting = "seed"

func withoutSeed(m map[string]string) map[string]string {
	c := maps.Clone(nonNil(m))
	delete(c, seedSetting)
	return c
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func settingsString(m map[string]string) string {
	if len(m) == 0 {
		return "{}"
	}
	var s []string
	for _, k := range sortedKeys(m) {
		s = append(s, k+"="+m[k])
	}
	return "{" + strings.Join(s, " ") + "}"
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
