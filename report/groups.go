package report

import hdr "github.com/HdrHistogram/hdrhistogram-go"

// groupHists gathers tenants' latency histograms into their groups': the one
// aggregation a run's results, a merge of shards and the charts of results
// read from a file all use. Groups keep the order they were first named in.
//
// The zero value is empty and ready to use. A groupHists is not safe for
// concurrent use; once built it is only read.
type groupHists struct {
	index map[string]int
	names []string
	hists []*hdr.PackedHistogram
	bad   []bool // a tenant's histogram was missing, unreadable or did not fit
}

// group returns the index of the group name, adding it if new.
func (g *groupHists) group(name string) int {
	if i, ok := g.index[name]; ok {
		return i
	}
	if g.index == nil {
		g.index = map[string]int{}
	}
	i := len(g.names)
	g.index[name] = i
	g.names = append(g.names, name)
	g.hists = append(g.hists, newHist())
	g.bad = append(g.bad, false)
	return i
}

// add merges h into group i's histogram, marking the group incomplete when
// h does not fit.
func (g *groupHists) add(i int, h *hdr.PackedHistogram) {
	if g.hists[i].Merge(h) != 0 {
		g.bad[i] = true
	}
}

// addEncoded merges a tenant's encoded histogram into its group's. An empty
// encoding of a tenant with ok responses (count > 0), or one that does not
// decode, marks the group incomplete; the group's other tenants are then
// not decoded.
func (g *groupHists) addEncoded(group, enc string, count uint64) {
	i := g.group(group)
	if g.bad[i] {
		return
	}
	if enc == "" {
		g.bad[i] = count > 0
		return
	}
	h, err := decode(enc)
	if err != nil {
		g.bad[i] = true
		return
	}
	g.add(i, h)
}

// of returns the histogram of the group name when it was gathered whole,
// nil otherwise.
func (g *groupHists) of(name string) *hdr.PackedHistogram {
	i, ok := g.index[name]
	if !ok || g.bad[i] {
		return nil
	}
	return g.hists[i]
}

// groupHistograms returns r's group histograms: those its Recorder or merge
// built, or else the merge of its tenants' snapshots, decoded once here;
// nil when r carries no snapshot for each tenant.
func (r *Results) groupHistograms() *groupHists {
	if r.hists != nil {
		return r.hists
	}
	if r.Histograms == nil || len(r.Histograms.Tenants) != len(r.Tenants) {
		return nil
	}
	g := &groupHists{}
	for i, t := range r.Tenants {
		g.addEncoded(t.Group, r.Histograms.Tenants[i], t.Latency.Count)
	}
	return g
}

// intervalStats are what the interval log and the charts read of an
// interval's histogram: microseconds.
type intervalStats struct {
	count         int64
	p50, p99, max int64
}

// intervalFigures returns h's interval figures, percentiles by the reference rank
// rule.
func intervalFigures(h *hdr.PackedHistogram) *intervalStats {
	return &intervalStats{count: h.TotalCount(), p50: valueAtPercentile(h, 50), p99: valueAtPercentile(h, 99), max: h.Max()}
}

// figures returns the interval's figures, decoding its snapshot only when
// they are not known yet.
func (iv *IntervalSnapshot) figures() (*intervalStats, error) {
	if iv.stats != nil {
		return iv.stats, nil
	}
	h, err := decode(iv.Hist)
	if err != nil {
		return nil, err
	}
	return intervalFigures(h), nil
}

// prepare decodes, once, what the charts and the interval log read of r's
// snapshots and keeps it beside them: the group histograms and each
// interval's figures. It is called before the charts are drawn in
// parallel, which then only read; results made by a Recorder or a merge
// have them already.
func (r *Results) prepare() {
	if r.hists == nil {
		r.hists = r.groupHistograms()
	}
	if r.Histograms == nil {
		return
	}
	for i := range r.Histograms.Intervals {
		iv := &r.Histograms.Intervals[i]
		if iv.stats == nil {
			iv.stats, _ = iv.figures() // an unreadable one stays unknown
		}
	}
}
