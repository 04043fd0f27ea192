package report

import (
	"fmt"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"stampede/limit"
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
	// TimeScale is the time scale the run played at; zero means the
	// scenario's (the sim's, and a live run at the scale the file gave).
	TimeScale float64
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
// Add costs a few array increments, two histogram records and an entry in
// a log of the tenants' latencies, which go into their histograms a tenant
// after another (see tenantLatency); a group's latencies are copied into
// their bucket's histogram when the bucket ends (see groupRec.flush). It allocates only when a result
// opens a series bucket past the scenario's duration, when a group's
// bucket ends, or for a latency no earlier one of its tenant had to the
// histogram's precision; the tenants' histograms are sparse so that 250
// tenants cost kilobytes, not 46 MB.
//
// A Recorder is not safe for concurrent use: an engine either feeds it from
// one goroutine or keeps one per goroutine and merges them. Its zero value
// records nothing useful; use NewRecorder.
type Recorder struct {
	sc      *scenarios.Scenario
	tenants []scenarios.Tenant
	step    time.Duration
	planned int // buckets the scenario's duration fills

	ten []tenantRec // per tenant
	hot []tenantHot // per tenant
	// lat holds the latencies of ok results not yet in their tenants'
	// histograms, in the order they came; flushLatencies records them by
	// tenant once cap(lat) have come. See tenantLatency.
	lat    []tenantLatency
	latBuf []tenantLatency // flushLatencies' sorted copy of lat
	latPos []int32         // flushLatencies' per-tenant counts and offsets
	// tBusy is, per tenant and bucket, the model seconds its requests were
	// in flight; per tenant nil until one was. It feeds the hosts' series,
	// which is drawn only when no limiter key was sampled, so it is
	// dropped, nil, once one was: a fleet's 600 buckets a tenant are 2.4 KB.
	tBusy [][]float32
	// tReq is, per tenant and bucket of their intended send, the requests
	// limit_req let through and how many of those it delayed first; nil
	// without limit_req, and per tenant until one passed.
	tReq   [][]reqCount
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
	// lowPeak is at most the least peak of the keys followed: a key that
	// is not followed and peaks no higher cannot take a place among them.
	lowPeak int
	lastEnd time.Duration
}

// tenantRec is what the recorder keeps of one tenant that Add touches on
// every result, in one place: with a fleet the results come in no order
// of tenants the cache can follow, and each place is a miss.
type tenantRec struct {
	tally tally
	work  time.Duration // worker time, the sum of Result.Work
	hist  *hdr.PackedHistogram
}

// tenantHot is what Add touches of a tenant for a dropped result, which
// names no status and took no work: 8 bytes a tenant in a slice of their
// own, where a tenantRec is 136. A fleet past the engines' in-flight cap
// has nearly all its results dropped (99% at 250,000 tenants on 8
// workers), and their count in the tally was a cache miss each, a quarter
// of the run.
type tenantHot struct {
	dropped uint32 // such results not yet in the tenant's tally
	group   int32  // index in groups
}

// tenantLatency is an ok result's latency, in the histograms' unit, and
// its tenant. A fleet's results come in no order of tenants, and each
// record into a tenant's sparse histogram read three lines of its own (the
// histogram, its geometry, its indices), each a miss: at 100,000 tenants
// with the workers scaled, 535 ns a result, a third of the run. Kept in a
// log and recorded a tenant after another, they are read in address
// order, which the cache's prefetch follows. A histogram's counts are the
// same whatever order its values come in.
type tenantLatency struct {
	tenant int32
	us     uint32 // micros clamps to histHighest, which a uint32 holds
}

// latencyLog is the number of latencies Recorder.lat holds before they go
// into their tenants' histograms, for tenants tenants: one a tenant, so
// that a flush's sweep is worth its pass over the tenants, within
// [minLatencyLog, maxLatencyLog].
func latencyLog(tenants int) int { return min(max(tenants, minLatencyLog), maxLatencyLog) }

const (
	minLatencyLog = 4096
	maxLatencyLog = 1 << 20 // 8 MB; scenarios' tenant bound is below it
)

// flushLatencies records the latencies in r.lat into their tenants'
// histograms, grouped by tenant in tenant order (a counting sort), and
// empties the log.
func (r *Recorder) flushLatencies() {
	if len(r.lat) == 0 {
		return
	}
	if r.latPos == nil {
		r.latPos = make([]int32, len(r.ten)+1)
		r.latBuf = make([]tenantLatency, cap(r.lat))
	}
	pos := r.latPos
	clear(pos)
	for _, l := range r.lat {
		pos[l.tenant+1]++
	}
	for i := 1; i < len(pos); i++ {
		pos[i] += pos[i-1]
	}
	out := r.latBuf[:len(r.lat)]
	for _, l := range r.lat {
		out[pos[l.tenant]] = l
		pos[l.tenant]++
	}
	for _, l := range out {
		r.ten[l.tenant].hist.RecordValue(int64(l.us)) // in range by micros
	}
	r.lat = r.lat[:0]
}

// countDropped counts a dropped result of tenant ti in its tenantHot,
// carrying into its tally when the count wraps.
func (r *Recorder) countDropped(ti int) {
	h := &r.hot[ti]
	h.dropped++
	if h.dropped == 0 {
		r.ten[ti].tally.n[workload.Dropped] += 1 << 32
	}
}

// tallyOf returns tenant i's tally with its dropped results in it.
func (r *Recorder) tallyOf(i int) tally {
	t := r.ten[i].tally
	t.n[workload.Dropped] += uint64(r.hot[i].dropped)
	return t
}

type groupRec struct {
	name    string
	tenants int
	counts  [][numOutcomes]uint32
	hists   []*hdr.PackedHistogram // per bucket; nil until an ok response ends in it
	// open holds the latencies of ok responses ending in bucket openB that
	// are not in hists[openB] yet; nil until one is. See groupRec.flush.
	open  *hdr.PackedHistogram
	openB int
}

// flush moves the latencies g holds open into the histogram of their
// bucket. Results end in bucket order (the simulator's exactly, the live
// engine's nearly), so a bucket's latencies are recorded into a histogram
// kept from one bucket to the next, which has grown its slices, and copied
// at the bucket's end: each bucket's own, recorded into as they came, grew
// its slices a dozen times (0.45 of recorder/250's 0.67 allocations a
// request). A histogram has the same counts whatever order its values come
// in.
func (g *groupRec) flush() {
	o := g.open
	if o == nil || o.TotalCount() == 0 {
		return
	}
	if h := g.hists[g.openB]; h != nil {
		h.Merge(o)
	} else {
		g.hists[g.openB] = o.Clone()
	}
	// Reset keeps a widened count width; a copy of a new histogram has the
	// width recording into the bucket's own would give it.
	if o.CountWidth() > 1 {
		g.open = newHist()
	} else {
		o.Reset()
	}
}

// flush records every pending latency.
func (r *Recorder) flush() {
	r.flushLatencies()
	for i := range r.groups {
		r.groups[i].flush()
	}
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
	r.ten = make([]tenantRec, len(r.tenants))
	r.hot = make([]tenantHot, len(r.tenants))
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
		r.hot[i].group = int32(g)
	}
	// A group of no tenants still appears, in file order.
	for _, tg := range sc.Tenants {
		if _, ok := gi[tg.Group]; !ok {
			gi[tg.Group] = len(r.groups)
			r.groups = append(r.groups, groupRec{name: tg.Group, counts: make([][numOutcomes]uint32, r.planned), hists: make([]*hdr.PackedHistogram, r.planned)})
		}
	}
	r.pos = positions(r.tenants)
	r.tBusy = make([][]float32, len(r.tenants))
	if hasReqLimits(sc.Proxy.Limits) {
		r.tReq = make([][]reqCount, len(r.tenants))
	}
	for i := range r.ten {
		r.ten[i].hist = newHist()
	}
	r.lat = make([]tenantLatency, 0, latencyLog(len(r.ten)))
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
	if ti < 0 || ti >= len(r.ten) {
		r.other.add(o, res.Status)
		return
	}
	ok := o == workload.OK
	var us int64
	if ok {
		us = micros(res.Latency)
	}
	if o == workload.Dropped && res.Status == 0 && res.Work == 0 {
		r.countDropped(ti)
	} else {
		t := &r.ten[ti]
		t.tally.add(o, res.Status)
		t.work += res.Work
		if o != workload.Dropped && r.tBusy != nil {
			r.noteInFlight(ti, res.Intended, end)
		}
		if r.tReq != nil && o != workload.Dropped && o != workload.Rejected {
			r.notePassed(ti, res.Intended, res.Delayed)
		}
		if ok {
			if len(r.lat) == cap(r.lat) {
				r.flushLatencies()
			}
			r.lat = append(r.lat, tenantLatency{int32(ti), uint32(us)})
		}
	}
	if ri := int(res.Route); ri >= 0 && ri < len(r.rTally) {
		r.rTally[ri].add(o, res.Status)
		if ok {
			r.rHist[ri].RecordValue(us)
		}
	}
	g := &r.groups[r.hot[ti].group]
	b := r.bucket(end)
	if b >= len(g.counts) {
		g.grow(b)
	}
	g.counts[b][o]++
	if ok {
		if g.open == nil {
			g.open = newHist()
		}
		if b != g.openB {
			g.flush()
			g.openB = b
		}
		g.open.RecordValue(us) // in range by micros
	}
}

// noteInFlight adds the part of [from, to) that falls in each series bucket
// to tenant ti's in-flight time, unless a limiter key has been sampled.
func (r *Recorder) noteInFlight(ti int, from, to time.Duration) {
	if len(r.keys) > 0 {
		r.tBusy = nil // see Recorder.tBusy
		return
	}
	from = max(from, 0)
	if to <= from {
		return
	}
	last := r.bucket(to - 1)
	busy := r.tBusy[ti]
	if len(busy) <= last {
		busy = r.growBusy(busy, last+1)
		r.tBusy[ti] = busy
	}
	for b := r.bucket(from); b <= last; b++ {
		lo := max(from, time.Duration(b)*r.step)
		hi := to
		if b < maxBuckets-1 {
			hi = min(to, time.Duration(b+1)*r.step)
		}
		busy[b] += float32((hi - lo).Seconds())
	}
}

// growBusy returns busy lengthened with zeros to n buckets. Its room
// doubles, but not past the planned buckets while n is within them: a
// tenant's series that the run fills whole takes no room it cannot use.
func (r *Recorder) growBusy(busy []float32, n int) []float32 {
	if n <= cap(busy) {
		return busy[:n] // never written past len: zeros
	}
	c := max(2*cap(busy), 64)
	if n <= r.planned {
		c = min(c, r.planned)
	}
	grown := make([]float32, n, max(c, n))
	copy(grown, busy)
	return grown
}

// reqCount is one tenant's requests limit_req passed on in one bucket, and
// how many of them it delayed first.
type reqCount struct{ passed, delayed uint32 }

// hasReqLimits reports whether c has a limit_req anywhere.
func hasReqLimits(c limit.Config) bool {
	if len(c.Req) > 0 {
		return true
	}
	for _, l := range c.Locations {
		if len(l.Req) > 0 {
			return true
		}
	}
	return false
}

// notePassed counts a request of tenant ti, meant to be sent at model time
// at, that limit_req passed on, delayed or not.
func (r *Recorder) notePassed(ti int, at time.Duration, delayed bool) {
	b := r.bucket(at)
	rc := r.tReq[ti]
	if b >= len(rc) {
		rc = append(rc, make([]reqCount, b+1-len(rc))...)
		r.tReq[ti] = rc
	}
	rc[b].passed++
	if delayed {
		rc[b].delayed++
	}
}

// Merge adds o's records to r. Both must be for the same scenario; Merge
// panics when their tenants, routes or steps differ.
func (r *Recorder) Merge(o *Recorder) {
	if len(r.ten) != len(o.ten) || len(r.rTally) != len(o.rTally) || len(r.groups) != len(o.groups) || r.step != o.step {
		panic(fmt.Sprintf("report: merging recorders of different scenarios (%q and %q)", r.sc.Name, o.sc.Name))
	}
	r.flush()
	o.flush()
	for i := range o.ten {
		r.ten[i].tally.merge(&o.ten[i].tally)
		r.ten[i].tally.n[workload.Dropped] += uint64(o.hot[i].dropped)
		r.ten[i].hist.Merge(o.ten[i].hist)
		r.ten[i].work += o.ten[i].work
		if r.tBusy != nil && o.tBusy != nil {
			if n := len(o.tBusy[i]); len(r.tBusy[i]) < n {
				r.tBusy[i] = r.growBusy(r.tBusy[i], n)
			}
			for b, v := range o.tBusy[i] {
				r.tBusy[i][b] += v
			}
		}
		if r.tReq != nil && len(o.tReq[i]) > 0 {
			if n := len(o.tReq[i]); len(r.tReq[i]) < n {
				r.tReq[i] = append(r.tReq[i], make([]reqCount, n-len(r.tReq[i]))...)
			}
			for b, c := range o.tReq[i] {
				r.tReq[i][b].passed += c.passed
				r.tReq[i][b].delayed += c.delayed
			}
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
	r.lowPeak = 0 // keys merged in may have peaked lower
	if len(r.keys) > 0 {
		r.tBusy = nil // see Recorder.tBusy
	}
	if o.lastEnd > r.lastEnd {
		r.lastEnd = o.lastEnd
	}
}

var _ workload.Sink = (*Recorder)(nil)
