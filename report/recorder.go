package report

import (
	"fmt"
	"math"
	"sort"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"stampede/scenarios"
	"stampede/workerpool"
	"stampede/workload"
)

// This file holds the recording API the engines call.

// numOutcomes is the number of outcomes, as an array length.
const numOutcomes = workload.NumOutcomes

// The geometry of every latency histogram: model-time microseconds from 1 µs
// to 1 h at 3 significant digits. Longer latencies are recorded as 1 h.
const (
	histLowest  = 1
	histHighest = int64(time.Hour / time.Microsecond)
	histDigits  = 3
)

// Series bounds. The step is chosen so that the scenario's duration fills at
// most maxPlannedBuckets buckets; results ending later (requests draining
// after the load stops) extend the series up to maxBuckets, and anything past
// that is counted in the last bucket.
const (
	maxPlannedBuckets = 600
	maxBuckets        = 4 * maxPlannedBuckets
)

// Key tracking bounds: the recorder follows at most maxKeyCandidates keys at
// a time (evicting the one with the lowest peak when a busier key appears)
// and reports the KeepKeys busiest.
const (
	maxKeyCandidates = 64
	KeepKeys         = 10
)

// Series are the time series of a run, in model time. Buckets are indexed
// from the start of the run; a result falls in the bucket of the moment it
// ended (intended send time + latency), the moment a server operator sees it.
type Series struct {
	Step    float64         `json:"step_s"`  // width of one bucket, model seconds
	Groups  []GroupSeries   `json:"groups"`  // outcomes per bucket per group
	Backend []BackendSample `json:"backend"` // busy workers and queue length
	Keys    []KeySeries     `json:"keys"`    // in-flight per key, the busiest keys
	Limit   int             `json:"limit"`   // the first limit_conn's per-key limit, 0 if none

	// Hosts are the busiest hosts' requests in flight as their clients
	// saw them, for runs that sampled no limiter keys (limit_req only, or
	// no limit at all); left out otherwise. Beyond the v1 contract.
	Hosts []HostSeries `json:"hosts,omitempty"`
}

// HostSeries is one host's mean number of requests in flight per series
// bucket, from the first bucket on: the time its tenants' sent requests
// (all but dropped arrivals) spent between their intended send and their
// end, divided by the bucket's width. Tenants names the tenants that share
// the host.
type HostSeries struct {
	Host     string    `json:"host"`
	Tenants  []string  `json:"tenants"`
	InFlight []float64 `json:"in_flight"`
}

// GroupSeries is one group's outcome counts per bucket: Counts[b][o] for
// bucket b and workload.Outcome o. Every group has the same number of buckets.
type GroupSeries struct {
	Name   string                         `json:"name"`
	Counts [][workload.NumOutcomes]uint32 `json:"counts"`
}

// BackendSample is the backend's state in one bucket: the most busy workers
// and the longest queue sampled in the bucket starting at T. Buckets without
// a sample are left out.
type BackendSample struct {
	T      float64 `json:"t"` // model seconds from the start
	Busy   int     `json:"busy"`
	Queued int     `json:"queued"`
}

// KeySeries is one limiter key's in-flight count over time: the most
// requests in flight seen in each bucket starting at T[i] in which keys were
// sampled (0 when the key was idle).
type KeySeries struct {
	Key      string    `json:"key"`
	T        []float64 `json:"t"`
	InFlight []int     `json:"in_flight"`
}

// Snapshots are the run's HdrHistograms, encoded, so that shards of one run
// merge exactly (stampede report a.json b.json). Each string is an
// HdrHistogram V2 compressed, base64 encoding (Histogram.Encode with
// V2CompressedEncodingCookieBase) of model-time microseconds.
type Snapshots struct {
	Tenants []string `json:"tenants"` // one per tenant, in the order of Results.Tenants
	Routes  []string `json:"routes"`

	// Intervals are the per-group histograms of each series bucket that
	// holds ok responses, in bucket order then group order: what
	// histograms.hlog is written from.
	Intervals []IntervalSnapshot `json:"intervals,omitempty"`
}

// IntervalSnapshot is one group's latency histogram over one series bucket.
type IntervalSnapshot struct {
	Group string  `json:"group"`
	T     float64 `json:"t"` // bucket start, model seconds
	Hist  string  `json:"h"`
}

// RunInfo is what the engine knows at the end of a run.
type RunInfo struct {
	Engine      string // "live" or "sim"
	Wall        time.Duration
	Interrupted bool
	Backend     workerpool.Stats // the pool's counters at the end
	Version     string
	CommandLine string
	// Start is the wall-clock moment the run began; the zero time leaves
	// it out of the results.
	Start time.Time

	// Tare is the wall time the live engine measured for a request that
	// does no work during the run (see Results.TareMS); zero for the sim.
	Tare time.Duration
	// Validity is the engine's verdict on its own run; nil means
	// conclusive (the sim's).
	Validity *Validity
	// TimeScaleAuto says the live engine chose the time scale itself.
	TimeScaleAuto bool
	// SendLateness is the live generator's; zero Sends (the sim) leaves it
	// out of the results.
	SendLateness workload.Lateness

	// Model is the model time the run covered. Zero means the longer of the
	// scenario's duration and the end of the last recorded result; an
	// interrupted run should say how far it got.
	Model time.Duration
}

// Recorder records one run: HdrHistograms per tenant and route, per group
// and series bucket, outcome counts per tenant and route, and the time
// series. Group histograms are the merge of their tenants' when Results is
// called, so nothing is recorded twice.
//
// Add costs a few array increments and three histogram records (about
// 130 ns). It allocates only when a result opens a series bucket past the
// scenario's duration, the first ok response of a group in a bucket, or a
// latency no earlier one of its tenant had to the histogram's precision;
// the tenants' histograms are sparse so that 250 tenants cost kilobytes, not
// 46 MB.
//
// A Recorder is not safe for concurrent use: an engine either feeds it from
// one goroutine or keeps one per goroutine and merges them. Its zero value
// records nothing useful; use NewRecorder.
type Recorder struct {
	sc      *scenarios.Scenario
	tenants []scenarios.Tenant
	step    time.Duration
	planned int // buckets the scenario's duration fills

	tGroup []int32 // tenant → index in groups
	tTally []tally
	tHist  []*hdr.PackedHistogram
	tWork  []time.Duration // worker time per tenant, the sum of Result.Work
	tBusy  [][]float32     // per tenant and bucket, model seconds its requests were in flight; nil until one was
	rTally []tally
	rHist  []*hdr.Histogram // dense: few routes, every result records into one
	other  tally            // results naming no known tenant
	// pos maps Result.Tenant (a Tenant's Index) to its place in tenants
	// when the two differ (a shard's tenants); nil when they are the same.
	pos []int32

	groups     []groupRec
	backend    []backendBucket
	keySampled []bool
	keys       map[string]*keyRec
	lastEnd    time.Duration
}

type groupRec struct {
	name    string
	tenants int
	counts  [][numOutcomes]uint32
	hists   []*hdr.PackedHistogram // per bucket; nil until an ok response ends in it
}

type backendBucket struct {
	busy, queued int
	set          bool
}

type keyRec struct {
	key      string
	peak     int
	sum      int64   // of per-bucket maxima, to break ties between equal peaks
	inflight []int32 // per bucket, the most in flight seen
}

// tally counts one set of requests by outcome and HTTP status.
type tally struct {
	n      [numOutcomes]uint64
	status []statusCount // few distinct statuses: a linear scan beats a map
}

type statusCount struct {
	code int16
	n    uint64
}

func (t *tally) add(o workload.Outcome, code int16) {
	t.n[o]++
	if code == 0 {
		return
	}
	for i := range t.status {
		if t.status[i].code == code {
			t.status[i].n++
			return
		}
	}
	t.status = append(t.status, statusCount{code, 1})
}

func (t *tally) merge(o *tally) {
	for i, n := range o.n {
		t.n[i] += n
	}
next:
	for _, s := range o.status {
		for i := range t.status {
			if t.status[i].code == s.code {
				t.status[i].n += s.n
				continue next
			}
		}
		t.status = append(t.status, s)
	}
}

func (t *tally) counts() Counts {
	c := Counts{
		OK:              t.n[workload.OK],
		Rejected:        t.n[workload.Rejected],
		BackendErrors:   t.n[workload.BackendError],
		GatewayTimeouts: t.n[workload.GatewayTimeout],
		ClientTimeouts:  t.n[workload.ClientTimeout],
		Dropped:         t.n[workload.Dropped],
		Errors:          t.n[workload.Error],
		Status:          make(map[string]uint64, len(t.status)),
	}
	for _, n := range t.n {
		c.Requests += n
	}
	for _, s := range t.status {
		c.Status[statusKey(int(s.code))] += s.n
	}
	return c
}

func newHist() *hdr.PackedHistogram { return hdr.NewPacked(histLowest, histHighest, histDigits) }

// micros converts a model-time latency to the histograms' unit, clamped to
// their range.
func micros(d time.Duration) int64 {
	us := int64(d / time.Microsecond)
	if us < 0 {
		return 0
	}
	if us > histHighest {
		return histHighest
	}
	return us
}

// niceSteps are the bucket widths the recorder chooses from.
var niceSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour,
}

// SeriesStep returns the bucket width for a run of model duration d: one
// second, or the smallest of 2 s, 5 s, 10 s, … 1 h that keeps d within 600
// buckets.
func SeriesStep(d time.Duration) time.Duration {
	for _, s := range niceSteps {
		if bucketsFor(d, s) <= maxPlannedBuckets {
			return s
		}
	}
	h := niceSteps[len(niceSteps)-1]
	n := (d + maxPlannedBuckets*h - 1) / (maxPlannedBuckets * h)
	return time.Duration(n) * h
}

func bucketsFor(d, step time.Duration) int {
	if d <= 0 {
		return 1
	}
	return int((d + step - 1) / step)
}

// NewRecorder returns a recorder for sc's tenants and routes. The recorder
// keeps sc and reads it again in Results.
func NewRecorder(sc *scenarios.Scenario) *Recorder {
	r := &Recorder{sc: sc, tenants: sc.Expand(), keys: map[string]*keyRec{}}
	r.step = SeriesStep(sc.Duration)
	r.planned = bucketsFor(sc.Duration, r.step)
	gi := map[string]int{}
	r.tGroup = make([]int32, len(r.tenants))
	for i, t := range r.tenants {
		g, ok := gi[t.Group]
		if !ok {
			g = len(r.groups)
			gi[t.Group] = g
			r.groups = append(r.groups, groupRec{
				name:   t.Group,
				counts: make([][numOutcomes]uint32, r.planned),
				hists:  make([]*hdr.PackedHistogram, r.planned),
			})
		}
		r.groups[g].tenants++
		r.tGroup[i] = int32(g)
	}
	// A group of no tenants still appears, in file order.
	for _, tg := range sc.Tenants {
		if _, ok := gi[tg.Group]; !ok {
			gi[tg.Group] = len(r.groups)
			r.groups = append(r.groups, groupRec{name: tg.Group, counts: make([][numOutcomes]uint32, r.planned), hists: make([]*hdr.PackedHistogram, r.planned)})
		}
	}
	r.pos = positions(r.tenants)
	r.tTally = make([]tally, len(r.tenants))
	r.tHist = make([]*hdr.PackedHistogram, len(r.tenants))
	r.tWork = make([]time.Duration, len(r.tenants))
	r.tBusy = make([][]float32, len(r.tenants))
	for i := range r.tHist {
		r.tHist[i] = newHist()
	}
	r.rTally = make([]tally, len(sc.Backend.Routes))
	r.rHist = make([]*hdr.Histogram, len(sc.Backend.Routes))
	for i := range r.rHist {
		r.rHist[i] = hdr.New(histLowest, histHighest, histDigits)
	}
	return r
}

// positions returns, for tenants whose Index is not their place in the
// list, the place of each Index (-1 for none); nil when every Index is its
// place.
func positions(ts []scenarios.Tenant) []int32 {
	dense, top := true, -1
	for i, t := range ts {
		dense = dense && t.Index == i
		top = max(top, t.Index)
	}
	if dense {
		return nil
	}
	pos := make([]int32, top+1)
	for i := range pos {
		pos[i] = -1
	}
	for i, t := range ts {
		if t.Index >= 0 {
			pos[t.Index] = int32(i)
		}
	}
	return pos
}

// Step returns the width of the series buckets.
func (r *Recorder) Step() time.Duration { return r.step }

// bucket returns the series bucket of model time t.
func (r *Recorder) bucket(t time.Duration) int {
	if t <= 0 {
		return 0
	}
	b := t / r.step
	if b >= maxBuckets {
		return maxBuckets - 1
	}
	return int(b)
}

func (g *groupRec) grow(b int) {
	for len(g.counts) <= b {
		g.counts = append(g.counts, [numOutcomes]uint32{})
		g.hists = append(g.hists, nil)
	}
}

// Add records one result. Results naming an unknown tenant are counted in
// the totals only; an unknown route is not counted per route; an unknown
// outcome counts as an error.
func (r *Recorder) Add(res *workload.Result) {
	o := res.Outcome
	if o >= numOutcomes {
		o = workload.Error
	}
	end := res.Intended + res.Latency
	if end > r.lastEnd {
		r.lastEnd = end
	}
	ti := int(res.Tenant)
	if r.pos != nil {
		ti = -1
		if i := int(res.Tenant); i >= 0 && i < len(r.pos) {
			ti = int(r.pos[i])
		}
	}
	if ti < 0 || ti >= len(r.tTally) {
		r.other.add(o, res.Status)
		return
	}
	ok := o == workload.OK
	var us int64
	if ok {
		us = micros(res.Latency)
	}
	r.tTally[ti].add(o, res.Status)
	r.tWork[ti] += res.Work
	if o != workload.Dropped {
		r.noteInFlight(ti, res.Intended, end)
	}
	if ok {
		r.tHist[ti].RecordValue(us) // in range by micros
	}
	if ri := int(res.Route); ri >= 0 && ri < len(r.rTally) {
		r.rTally[ri].add(o, res.Status)
		if ok {
			r.rHist[ri].RecordValue(us)
		}
	}
	g := &r.groups[r.tGroup[ti]]
	b := r.bucket(end)
	if b >= len(g.counts) {
		g.grow(b)
	}
	g.counts[b][o]++
	if ok {
		h := g.hists[b]
		if h == nil {
			h = newHist()
			g.hists[b] = h
		}
		h.RecordValue(us)
	}
}

// noteInFlight adds the part of [from, to) that falls in each series bucket
// to tenant ti's in-flight time.
func (r *Recorder) noteInFlight(ti int, from, to time.Duration) {
	from = max(from, 0)
	if to <= from {
		return
	}
	last := r.bucket(to - 1)
	busy := r.tBusy[ti]
	for len(busy) <= last {
		busy = append(busy, 0)
	}
	r.tBusy[ti] = busy
	for b := r.bucket(from); b <= last; b++ {
		lo := max(from, time.Duration(b)*r.step)
		hi := to
		if b < maxBuckets-1 {
			hi = min(to, time.Duration(b+1)*r.step)
		}
		busy[b] += float32((hi - lo).Seconds())
	}
}

// Merge adds o's records to r. Both must be for the same scenario; Merge
// panics when their tenants, routes or steps differ.
func (r *Recorder) Merge(o *Recorder) {
	if len(r.tTally) != len(o.tTally) || len(r.rTally) != len(o.rTally) || len(r.groups) != len(o.groups) || r.step != o.step {
		panic(fmt.Sprintf("report: merging recorders of different scenarios (%q and %q)", r.sc.Name, o.sc.Name))
	}
	for i := range o.tTally {
		r.tTally[i].merge(&o.tTally[i])
		r.tHist[i].Merge(o.tHist[i])
		r.tWork[i] += o.tWork[i]
		for len(r.tBusy[i]) < len(o.tBusy[i]) {
			r.tBusy[i] = append(r.tBusy[i], 0)
		}
		for b, v := range o.tBusy[i] {
			r.tBusy[i][b] += v
		}
	}
	for i := range o.rTally {
		r.rTally[i].merge(&o.rTally[i])
		r.rHist[i].Merge(o.rHist[i])
	}
	r.other.merge(&o.other)
	for gi := range o.groups {
		g, og := &r.groups[gi], &o.groups[gi]
		if n := len(og.counts); n > 0 {
			g.grow(n - 1)
		}
		for b := range og.counts {
			for k, n := range og.counts[b] {
				g.counts[b][k] += n
			}
			if oh := og.hists[b]; oh != nil && oh.TotalCount() > 0 {
				if g.hists[b] == nil {
					g.hists[b] = newHist()
				}
				g.hists[b].Merge(oh)
			}
		}
	}
	for b, ob := range o.backend {
		if ob.set {
			r.sampleBackend(b, ob.busy, ob.queued)
		}
	}
	for b, s := range o.keySampled {
		if s {
			r.markKeysSampled(b)
		}
	}
	for _, k := range sortedKeys(o.keys) {
		ok := o.keys[k]
		kr := r.keys[k]
		if kr == nil {
			kr = &keyRec{key: k}
			r.keys[k] = kr
		}
		for b, n := range ok.inflight {
			kr.note(b, int(n))
		}
	}
	r.pruneKeys(maxKeyCandidates)
	if o.lastEnd > r.lastEnd {
		r.lastEnd = o.lastEnd
	}
}

// SampleBackend records the backend's busy workers and queue length at model
// time at. The series keeps the largest of each per bucket.
func (r *Recorder) SampleBackend(at time.Duration, busy, queued int) {
	r.sampleBackend(r.bucket(at), busy, queued)
}

func (r *Recorder) sampleBackend(b, busy, queued int) {
	for len(r.backend) <= b {
		r.backend = append(r.backend, backendBucket{})
	}
	s := &r.backend[b]
	s.set = true
	s.busy = max(s.busy, busy)
	s.queued = max(s.queued, queued)
}

func (r *Recorder) markKeysSampled(b int) {
	for len(r.keySampled) <= b {
		r.keySampled = append(r.keySampled, false)
	}
	r.keySampled[b] = true
}

func (k *keyRec) note(b, n int) {
	for len(k.inflight) <= b {
		k.inflight = append(k.inflight, 0)
	}
	if int32(n) > k.inflight[b] {
		k.sum += int64(n) - int64(k.inflight[b])
		k.inflight[b] = int32(n)
	}
	k.peak = max(k.peak, n)
}

// busier reports whether a ranks before b among keys: higher peak, then more
// in-flight over time, then by name.
func busier(a, b *keyRec) bool {
	if a.peak != b.peak {
		return a.peak > b.peak
	}
	if a.sum != b.sum {
		return a.sum > b.sum
	}
	return a.key < b.key
}

// SampleKeys records the in-flight count of limiter keys at model time at.
// The recorder keeps the busiest keys only; counts of keys it does not keep
// are discarded. A key missing from inflight had nothing in flight.
func (r *Recorder) SampleKeys(at time.Duration, inflight map[string]int) {
	b := r.bucket(at)
	r.markKeysSampled(b)
	if len(inflight) == 0 {
		return
	}
	// Visit keys in order so that which keys are kept does not depend on
	// map iteration.
	for _, k := range sortedKeys(inflight) {
		n := inflight[k]
		if n <= 0 {
			continue
		}
		kr := r.keys[k]
		if kr == nil {
			if len(r.keys) >= maxKeyCandidates {
				low := r.lowestKey()
				if low.peak >= n {
					continue
				}
				delete(r.keys, low.key)
			}
			kr = &keyRec{key: k}
			r.keys[k] = kr
		}
		kr.note(b, n)
	}
}

// lowestKey returns the least busy key followed.
func (r *Recorder) lowestKey() *keyRec {
	var low *keyRec
	for _, k := range r.keys {
		if low == nil || busier(low, k) {
			low = k
		}
	}
	return low
}

// rankedKeys returns the keys followed, busiest first.
func (r *Recorder) rankedKeys() []*keyRec {
	ks := make([]*keyRec, 0, len(r.keys))
	for _, k := range r.keys {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return busier(ks[i], ks[j]) })
	return ks
}

func (r *Recorder) pruneKeys(n int) {
	ks := r.rankedKeys()
	for _, k := range ks[min(n, len(ks)):] {
		delete(r.keys, k.key)
	}
}

// Results builds results.json from what was recorded, evaluating the
// scenario's SLOs. It does not change the recorder.
func (r *Recorder) Results(info RunInfo) *Results {
	sc := r.sc
	model := info.Model
	if model == 0 {
		model = max(sc.Duration, r.lastEnd)
	}
	res := &Results{
		Schema:         Schema,
		Scenario:       sc.Name,
		Engine:         info.Engine,
		TimeScale:      sc.TimeScale,
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

	var enc v2Encoder
	total := r.other
	groupTally := make([]tally, len(r.groups))
	groupWork := make([]time.Duration, len(r.groups))
	groupHist := make([]*hdr.PackedHistogram, len(r.groups))
	for i := range groupHist {
		groupHist[i] = newHist()
	}
	res.Tenants = make([]TenantResult, len(r.tenants))
	res.Histograms.Tenants = make([]string, len(r.tenants))
	for i, t := range r.tenants {
		res.Tenants[i] = TenantResult{Name: t.Name, Group: t.Group, Host: t.Host, Counts: r.tTally[i].counts(), WorkS: workSeconds(r.tWork[i]), Latency: latencyOf(r.tHist[i])}
		res.Histograms.Tenants[i] = enc.encode(r.tHist[i])
		g := r.tGroup[i]
		groupTally[g].merge(&r.tTally[i])
		groupWork[g] += r.tWork[i]
		groupHist[g].Merge(r.tHist[i])
		total.merge(&r.tTally[i])
	}
	res.Totals = total.counts()
	res.Groups = make([]GroupResult, len(r.groups))
	for i, g := range r.groups {
		res.Groups[i] = GroupResult{Name: g.name, Tenants: g.tenants, Counts: groupTally[i].counts(), WorkS: workSeconds(groupWork[i]), Latency: latencyOf(groupHist[i])}
	}
	res.Routes = make([]RouteResult, len(r.rTally))
	res.Histograms.Routes = make([]string, len(r.rTally))
	for i, rt := range sc.Backend.Routes {
		if i >= len(r.rTally) {
			break
		}
		res.Routes[i] = RouteResult{Name: rt.Name, Counts: r.rTally[i].counts(), Latency: latencyOf(packed(r.rHist[i]))}
		res.Histograms.Routes[i] = encodeDense(r.rHist[i])
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
	for _, s := range res.Series.Backend {
		res.Backend.BusyMax = max(res.Backend.BusyMax, s.Busy)
		res.Backend.QueueMax = max(res.Backend.QueueMax, s.Queued)
	}
	n := 0
	if len(res.Series.Groups) > 0 {
		n = len(res.Series.Groups[0].Counts)
	}
	for b := 0; b < n; b++ {
		for _, g := range r.groups {
			if b < len(g.hists) && g.hists[b] != nil && g.hists[b].TotalCount() > 0 {
				res.Histograms.Intervals = append(res.Histograms.Intervals, IntervalSnapshot{
					Group: g.name, T: round((time.Duration(b) * r.step).Seconds(), 3), Hist: enc.encode(g.hists[b]),
				})
			}
		}
	}
	res.SLO = EvaluateSLOs(sc.SLO, res.Groups)
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
// at their busiest, over n buckets.
func (r *Recorder) hostSeries(n int) []HostSeries {
	type hostAcc struct {
		HostSeries
		peak, sum float64
	}
	at := map[string]*hostAcc{}
	var hosts []*hostAcc
	step := r.step.Seconds()
	for i, t := range r.tenants {
		busy := r.tBusy[i]
		if len(busy) == 0 {
			continue
		}
		h := at[t.Host]
		if h == nil {
			h = &hostAcc{HostSeries: HostSeries{Host: t.Host, InFlight: make([]float64, n)}}
			at[t.Host] = h
			hosts = append(hosts, h)
		}
		h.Tenants = append(h.Tenants, t.Name)
		for b, v := range busy[:min(len(busy), n)] {
			h.InFlight[b] += float64(v)
		}
	}
	for _, h := range hosts {
		for b, v := range h.InFlight {
			v = round(v/step, 3)
			h.InFlight[b] = v
			h.peak = max(h.peak, v)
			h.sum += v
		}
	}
	sort.SliceStable(hosts, func(i, j int) bool {
		a, b := hosts[i], hosts[j]
		if a.peak != b.peak {
			return a.peak > b.peak
		}
		if a.sum != b.sum {
			return a.sum > b.sum
		}
		return a.Host < b.Host
	})
	var out []HostSeries
	for _, h := range hosts[:min(KeepKeys, len(hosts))] {
		out = append(out, h.HostSeries)
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

// encodeDense is encode for a dense histogram: the same bytes as a packed
// histogram of the same counts.
func encodeDense(h *hdr.Histogram) string {
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
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
	p := math.Pow(10, float64(d))
	return math.Round(f*p) / p
}

var _ workload.Sink = (*Recorder)(nil)
