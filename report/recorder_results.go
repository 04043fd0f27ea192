package report

// This file builds results.json from a Recorder: totals, groups, tenants
// and routes, their histograms encoded, the time series and the SLO
// verdicts.

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Results builds results.json from what was recorded, evaluating the
// scenario's SLOs. It does not change what the recorder holds.
func (r *Recorder) Results(info RunInfo) *Results {
	r.flush()
	sc := r.sc
	model := info.Model
	if model == 0 {
		model = max(sc.Duration, r.lastEnd)
	}
	res := &Results{
		Schema:         Schema,
		Scenario:       sc.Name,
		Engine:         info.Engine,
		TimeScale:      cmp.Or(info.TimeScale, sc.TimeScale),
		ModelDurationS: round(model.Seconds(), 3),
		WallDurationS:  round(info.Wall.Seconds(), 3),
		Interrupted:    info.Interrupted,
		Settings:       map[string]string{},
		Seed:           sc.Seed,
		Version:        info.Version,
		CommandLine:    info.CommandLine,
		StartUnixMS:    startMS(info.Start),
		TareMS:         float64(info.Tare.Microseconds()) / 1000,
		Histograms:     &Snapshots{},
		Validity:       info.Validity,
		TimeScaleAuto:  info.TimeScaleAuto,
	}
	if res.Validity == nil {
		res.Validity = &Validity{Conclusive: true, Reasons: []string{}}
	}
	if l := info.SendLateness; l.Sends > 0 {
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		res.SendLateness = &SendLateness{Sends: l.Sends, Early: l.Early, P50: ms(l.P50), P90: ms(l.P90), P99: ms(l.P99), Max: ms(l.Max)}
	}
	for k, v := range sc.Settings {
		res.Settings[k] = v
	}

	total := r.other.clone()
	groupTally := make([]tally, len(r.groups))
	groupWork := make([]time.Duration, len(r.groups))
	var groupHist groupHists
	for _, g := range r.groups {
		groupHist.group(g.name)
	}
	res.Tenants = make([]TenantResult, len(r.tenants))
	res.Histograms.Tenants = make([]string, len(r.tenants))
	for i, t := range r.tenants {
		tr, tl := &r.ten[i], r.tallyOf(i)
		res.Tenants[i] = TenantResult{Name: t.Name, Group: t.Group, Host: t.Host, Counts: tl.counts(), WorkS: workSeconds(tr.work), Latency: latencyOf(tr.hist)}
		g := r.hot[i].group
		groupTally[g].merge(&tl)
		groupWork[g] += tr.work
		groupHist.add(int(g), tr.hist)
		total.merge(&tl)
	}
	res.Totals = total.counts()
	res.Groups = make([]GroupResult, len(r.groups))
	for i, g := range r.groups {
		res.Groups[i] = GroupResult{Name: g.name, Tenants: g.tenants, Counts: groupTally[i].counts(), WorkS: workSeconds(groupWork[i]), Latency: latencyOf(groupHist.hists[i])}
	}
	res.Routes = make([]RouteResult, len(r.rTally))
	res.Histograms.Routes = make([]string, len(r.rTally))
	var enc v2Encoder
	for i, rt := range sc.Backend.Routes {
		if i >= len(r.rTally) {
			break
		}
		h := packed(r.rHist[i])
		res.Routes[i] = RouteResult{Name: rt.Name, Counts: r.rTally[i].counts(), Latency: latencyOf(h)}
		res.Histograms.Routes[i] = enc.encode(h)
	}

	workers := info.Backend.Workers
	if workers == 0 {
		workers = sc.Backend.Workers
	}
	res.Backend = BackendResult{Workers: workers, BusyMax: info.Backend.BusyMax, QueueMax: info.Backend.QueueMax}
	if workers > 0 && model > 0 {
		res.Backend.Utilization = round(float64(info.Backend.BusyTime)/(float64(workers)*float64(model)), 4)
	}

	res.Series = r.series()
	if r.tReq != nil && len(res.Series.Groups) > 0 {
		res.passed = r.passedSeries(len(res.Series.Groups[0].Counts))
	}
	for _, s := range res.Series.Backend {
		res.Backend.BusyMax = max(res.Backend.BusyMax, s.Busy)
		res.Backend.QueueMax = max(res.Backend.QueueMax, s.Queued)
	}
	n := 0
	if len(res.Series.Groups) > 0 {
		n = len(res.Series.Groups[0].Counts)
	}
	var ivHists []*hdr.PackedHistogram
	for b := 0; b < n; b++ {
		for _, g := range r.groups {
			if b < len(g.hists) && g.hists[b] != nil && g.hists[b].TotalCount() > 0 {
				res.Histograms.Intervals = append(res.Histograms.Intervals, IntervalSnapshot{
					Group: g.name, T: round((time.Duration(b) * r.step).Seconds(), 3), stats: intervalFigures(g.hists[b]),
				})
				ivHists = append(ivHists, g.hists[b])
			}
		}
	}
	// Encoding (deflate) is most of Results' cost: spread it over the
	// processors. Each snapshot is its histogram's bytes, whoever encodes it.
	nt := len(r.ten)
	encodeAll(nt+len(ivHists), func(i int, enc *v2Encoder) {
		if i < nt {
			res.Histograms.Tenants[i] = enc.encode(r.ten[i].hist)
		} else {
			res.Histograms.Intervals[i-nt].Hist = enc.encode(ivHists[i-nt])
		}
	})
	res.SLO = EvaluateSLOs(sc.SLO, res.Groups)
	res.hists = &groupHist
	return res
}

// series builds the exported time series. Every group gets the same number
// of buckets: the planned ones, or up to the last one used.
func (r *Recorder) series() *Series {
	s := &Series{Step: r.step.Seconds(), Groups: []GroupSeries{}, Backend: []BackendSample{}, Keys: []KeySeries{}}
	if len(r.sc.Proxy.Limits.Conn) > 0 {
		s.Limit = r.sc.Proxy.Limits.Conn[0].PerKey
	}
	n := r.planned
	for _, g := range r.groups {
		for b := len(g.counts) - 1; b >= n; b-- {
			if g.counts[b] != ([numOutcomes]uint32{}) {
				n = b + 1
				break
			}
		}
	}
	for _, g := range r.groups {
		c := make([][numOutcomes]uint32, n)
		copy(c, g.counts)
		s.Groups = append(s.Groups, GroupSeries{Name: g.name, Counts: c})
	}
	sec := func(b int) float64 { return round((time.Duration(b) * r.step).Seconds(), 3) }
	for b, bb := range r.backend {
		if bb.set {
			s.Backend = append(s.Backend, BackendSample{T: sec(b), Busy: bb.busy, Queued: bb.queued})
		}
	}
	ks := r.rankedKeys()
	for _, k := range ks[:min(KeepKeys, len(ks))] {
		kser := KeySeries{Key: k.key, T: []float64{}, InFlight: []int{}}
		for b, sampled := range r.keySampled {
			if !sampled {
				continue
			}
			v := 0
			if b < len(k.inflight) {
				v = int(k.inflight[b])
			}
			kser.T = append(kser.T, sec(b))
			kser.InFlight = append(kser.InFlight, v)
		}
		s.Keys = append(s.Keys, kser)
	}
	if len(s.Keys) == 0 {
		s.Hosts = r.hostSeries(n)
	}
	return s
}

// hostSeries returns the KeepKeys hosts whose requests were most in flight
// at their busiest, over n buckets. Hosts are ranked from one scratch row
// each in turn; only the kept ones get a series of their own, so a fleet of
// 100,000 hosts costs one row, not 100,000.
func (r *Recorder) hostSeries(n int) []HostSeries {
	type hostAcc struct {
		host      string
		tenants   []int // indexes into r.tenants, in tenant order
		peak, sum float64
	}
	at := map[string]int{}
	var hosts []hostAcc
	for i, t := range r.tenants {
		if i >= len(r.tBusy) || len(r.tBusy[i]) == 0 {
			continue
		}
		j, ok := at[t.Host]
		if !ok {
			j = len(hosts)
			at[t.Host] = j
			hosts = append(hosts, hostAcc{host: t.Host})
		}
		hosts[j].tenants = append(hosts[j].tenants, i)
	}
	step := r.step.Seconds()
	row := make([]float64, n)
	fill := func(h *hostAcc) {
		clear(row)
		for _, i := range h.tenants {
			busy := r.tBusy[i]
			for b, v := range busy[:min(len(busy), n)] {
				row[b] += float64(v)
			}
		}
		h.peak, h.sum = 0, 0
		for b, v := range row {
			v = round(v/step, 3)
			row[b] = v
			h.peak = max(h.peak, v)
			h.sum += v
		}
	}
	for j := range hosts {
		fill(&hosts[j])
	}
	sort.SliceStable(hosts, func(i, j int) bool {
		a, b := hosts[i], hosts[j]
		if a.peak != b.peak {
			return a.peak > b.peak
		}
		if a.sum != b.sum {
			return a.sum > b.sum
		}
		return a.host < b.host
	})
	var out []HostSeries
	for j := range hosts[:min(KeepKeys, len(hosts))] {
		h := &hosts[j]
		fill(h)
		hs := HostSeries{Host: h.host, InFlight: slices.Clone(row)}
		for _, i := range h.tenants {
			hs.Tenants = append(hs.Tenants, r.tenants[i].Name)
		}
		out = append(out, hs)
	}
	return out
}

// latencyOf summarises h (microseconds) in milliseconds with 3 decimals,
// its percentiles by the reference libraries' rule (valueAtPercentile). An
// empty histogram gives all zeros.
func latencyOf(h *hdr.PackedHistogram) Latency {
	n := h.TotalCount()
	if n == 0 {
		return Latency{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Latency{
		Count: uint64(n),
		Min:   ms(h.Min()),
		Mean:  math.Round(h.Mean()) / 1000,
		P50:   ms(valueAtPercentile(h, 50)),
		P90:   ms(valueAtPercentile(h, 90)),
		P95:   ms(valueAtPercentile(h, 95)),
		P99:   ms(valueAtPercentile(h, 99)),
		P999:  ms(valueAtPercentile(h, 99.9)),
		Max:   ms(h.Max()),
	}
}

// encode returns h's V2 compressed, base64 encoding. Encoding a histogram
// of the recorder's geometry does not fail; if it ever did, the snapshot is
// left empty and merging it reports the problem.
func encode(h *hdr.PackedHistogram) string {
	b, err := h.Encode()
	if err != nil {
		return ""
	}
	return string(b)
}

// decode reads one snapshot string.
func decode(s string) (*hdr.PackedHistogram, error) {
	return hdr.DecodePacked([]byte(s))
}

// startMS returns t in milliseconds since the Unix epoch, 0 for the zero
// time.
func startMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// workSeconds converts worker time to results.json's work_s: seconds to the
// microsecond, so that shards whose worker times are whole microseconds sum
// to exactly what one run gives.
func workSeconds(d time.Duration) float64 { return round(d.Seconds(), 6) }

// round rounds f to d decimals.
func round(f float64, d int) float64 {
	p := 0.0
	if d >= 0 && d < len(pow10) {
		p = pow10[d] // exact, as math.Pow gives them, without its cost
	} else {
		p = math.Pow(10, float64(d))
	}
	return math.Round(f*p) / p
}

var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// passedSeries returns, for the maxKeyLines tenants limit_req delayed most
// (then passed most), their requests it passed on and delayed per model
// second over n buckets.
func (r *Recorder) passedSeries(n int) []passedSeries {
	type acc struct {
		i              int
		passed, delayd uint64
	}
	var ts []acc
	for i, rc := range r.tReq {
		a := acc{i: i}
		for _, c := range rc {
			a.passed += uint64(c.passed)
			a.delayd += uint64(c.delayed)
		}
		if a.passed > 0 {
			ts = append(ts, a)
		}
	}
	slices.SortStableFunc(ts, func(a, b acc) int {
		return cmp.Or(cmp.Compare(b.delayd, a.delayd), cmp.Compare(b.passed, a.passed))
	})
	step := r.step.Seconds()
	var out []passedSeries
	for _, a := range ts[:min(maxKeyLines, len(ts))] {
		t := r.tenants[a.i]
		ps := passedSeries{tenant: t.Name, host: t.Host, passed: make([]float64, n), delayed: make([]float64, n), delayedTotal: a.delayd}
		for b, c := range r.tReq[a.i][:min(n, len(r.tReq[a.i]))] {
			ps.passed[b] = float64(c.passed) / step
			ps.delayed[b] = float64(c.delayed) / step
		}
		out = append(out, ps)
	}
	return out
}
