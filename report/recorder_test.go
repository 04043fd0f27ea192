package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"stampede/limit"
	"stampede/scenarios"
	"stampede/workload"
)

// ms is n milliseconds.
func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// recScenario is the story in miniature: three ordinary sites and user-x on
// two routes, a per-host limit of 4, ten model seconds.
func recScenario() *scenarios.Scenario {
	return &scenarios.Scenario{
		Name: "mini-stock", Duration: 10 * time.Second, TimeScale: 0.01, Seed: 7,
		Backend: scenarios.Backend{Workers: 8, Routes: []scenarios.Route{{Name: "page", Path: "/app"}, {Name: "stock-balance", Path: "/api"}}},
		Proxy:   scenarios.Proxy{Limits: limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 4}}}},
		Tenants: []scenarios.TenantGroup{
			{Group: "other-sites", Count: 3, Host: "site{i}.example.com"},
			{Group: "user-x", Count: 1, Host: "x.example.com"},
		},
		SLO: []scenarios.SLO{
			{Group: "other-sites", Text: "p99 < 1s", Metric: "p99", Op: "<", Threshold: 1000},
			{Group: "user-x", Text: "ok_rate > 99%", Metric: "ok_rate", Op: ">", Threshold: 0.99},
		},
		Settings: map[string]string{"proxy.limit_conn.per_key": "4"},
	}
}

// miniRun is a fixed set of results for recScenario: site 1 gets 100 ok
// answers of 1..100 ms, one each 50 ms; site 2 one 503 and one 502; site 3 a
// client timeout and a dropped arrival; user-x 4 ok answers of 3 s and 4
// rejections.
func miniRun() []workload.Result {
	var rs []workload.Result
	for i := 1; i <= 100; i++ {
		rs = append(rs, workload.Result{Tenant: 0, Route: 0, Outcome: workload.OK, Status: 200, Intended: ms(float64(50 * i)), Latency: ms(float64(i))})
	}
	rs = append(rs,
		workload.Result{Tenant: 1, Route: 0, Outcome: workload.Rejected, Status: 503, Intended: ms(100), Latency: ms(1)},
		workload.Result{Tenant: 1, Route: 0, Outcome: workload.BackendError, Status: 502, Intended: ms(1500), Latency: 120 * time.Second},
		workload.Result{Tenant: 2, Route: 0, Outcome: workload.ClientTimeout, Intended: ms(2000), Latency: 2 * time.Second},
		workload.Result{Tenant: 2, Route: 0, Outcome: workload.Dropped, Intended: ms(2500)},
	)
	for i := 0; i < 4; i++ {
		rs = append(rs,
			workload.Result{Tenant: 3, Route: 1, Outcome: workload.OK, Status: 200, Intended: time.Second, Latency: 3 * time.Second},
			workload.Result{Tenant: 3, Route: 1, Outcome: workload.Rejected, Status: 503, Intended: time.Second, Latency: ms(2)},
		)
	}
	return rs
}

func record(sc *scenarios.Scenario, rs []workload.Result) *Recorder {
	r := NewRecorder(sc)
	for i := range rs {
		r.Add(&rs[i])
	}
	return r
}

func TestRecorderCounts(t *testing.T) {
	res := record(recScenario(), miniRun()).Results(RunInfo{Engine: "sim"})
	type row struct {
		name                                                  string
		got                                                   Counts
		req, ok, rej, backend, gateway, client, dropped, errs uint64
		status                                                map[string]uint64
	}
	rows := []row{
		{"tenant other-sites-1", res.Tenants[0].Counts, 100, 100, 0, 0, 0, 0, 0, 0, map[string]uint64{"200": 100}},
		{"tenant other-sites-2", res.Tenants[1].Counts, 2, 0, 1, 1, 0, 0, 0, 0, map[string]uint64{"502": 1, "503": 1}},
		{"tenant other-sites-3", res.Tenants[2].Counts, 2, 0, 0, 0, 0, 1, 1, 0, map[string]uint64{}},
		{"tenant user-x", res.Tenants[3].Counts, 8, 4, 4, 0, 0, 0, 0, 0, map[string]uint64{"200": 4, "503": 4}},
		{"group other-sites", res.Groups[0].Counts, 104, 100, 1, 1, 0, 1, 1, 0, map[string]uint64{"200": 100, "502": 1, "503": 1}},
		{"group user-x", res.Groups[1].Counts, 8, 4, 4, 0, 0, 0, 0, 0, map[string]uint64{"200": 4, "503": 4}},
		{"route page", res.Routes[0].Counts, 104, 100, 1, 1, 0, 1, 1, 0, map[string]uint64{"200": 100, "502": 1, "503": 1}},
		{"route stock-balance", res.Routes[1].Counts, 8, 4, 4, 0, 0, 0, 0, 0, map[string]uint64{"200": 4, "503": 4}},
		{"totals", res.Totals, 112, 104, 5, 1, 0, 1, 1, 0, map[string]uint64{"200": 104, "502": 1, "503": 5}},
	}
	for i, r := range rows {
		want := Counts{Requests: r.req, OK: r.ok, Rejected: r.rej, BackendErrors: r.backend, GatewayTimeouts: r.gateway, ClientTimeouts: r.client, Dropped: r.dropped, Errors: r.errs, Status: r.status}
		if !reflect.DeepEqual(r.got, want) {
			t.Errorf("step %d: %s counts = %+v, want %+v", i, r.name, r.got, want)
		}
	}
	if g := res.Groups; len(g) != 2 || g[0].Name != "other-sites" || g[0].Tenants != 3 || g[1].Name != "user-x" || g[1].Tenants != 1 {
		t.Errorf("groups = %+v, want other-sites (3 tenants) then user-x (1)", g)
	}
	if ts := res.Tenants; ts[0].Name != "other-sites-1" || ts[0].Host != "site1.example.com" || ts[3].Name != "user-x" || ts[3].Host != "x.example.com" {
		t.Errorf("tenants named %q/%q and %q/%q, want other-sites-1/site1.example.com and user-x/x.example.com", ts[0].Name, ts[0].Host, ts[3].Name, ts[3].Host)
	}
}

// The expected values follow HdrHistogram's buckets at 3 significant digits:
// a value v in [1024·2^k, 2048·2^k) µs falls in a bucket 2^k µs wide, and
// percentiles report the bucket's highest equivalent value.
func TestRecorderLatency(t *testing.T) {
	res := record(recScenario(), miniRun()).Results(RunInfo{Engine: "sim"})
	site1 := Latency{Count: 100, Min: 1, Mean: 50.5, P50: 50.015, P90: 90.047, P95: 95.039, P99: 99.007, P999: 100.031, Max: 100.031}
	userX := Latency{Count: 4, Min: 2998.272, Mean: 3000.32, P50: 3000.319, P90: 3000.319, P95: 3000.319, P99: 3000.319, P999: 3000.319, Max: 3000.319}
	none := Latency{}
	cases := []struct {
		name string
		got  Latency
		want Latency
	}{
		{"tenant other-sites-1", res.Tenants[0].Latency, site1},
		{"tenant other-sites-2 (no ok)", res.Tenants[1].Latency, none},
		{"tenant user-x", res.Tenants[3].Latency, userX},
		{"group other-sites (= its one answering tenant)", res.Groups[0].Latency, site1},
		{"group user-x", res.Groups[1].Latency, userX},
		{"route page", res.Routes[0].Latency, site1},
		{"route stock-balance", res.Routes[1].Latency, userX},
	}
	for i, c := range cases {
		g := c.got
		// The mean is of bucket midpoints: compare it within 0.1%.
		if math.Abs(g.Mean-c.want.Mean) > c.want.Mean*0.001 {
			t.Errorf("step %d: %s mean = %v ms, want %v ms within 0.1%%", i, c.name, g.Mean, c.want.Mean)
		}
		g.Mean = c.want.Mean
		if g != c.want {
			t.Errorf("step %d: %s latency = %+v, want %+v", i, c.name, g, c.want)
		}
	}
}

func TestRecorderGroupIsMergeOfTenants(t *testing.T) {
	sc := recScenario()
	var rs []workload.Result
	// Site 1 answers in 10 ms, site 2 in 20 ms, site 3 in 1 s: the group's
	// p50 is 20 ms and its p99 1 s, which no single tenant shows.
	for i := 0; i < 100; i++ {
		rs = append(rs,
			workload.Result{Tenant: 0, Outcome: workload.OK, Status: 200, Intended: ms(float64(i * 10)), Latency: 10 * time.Millisecond},
			workload.Result{Tenant: 1, Outcome: workload.OK, Status: 200, Intended: ms(float64(i * 10)), Latency: 20 * time.Millisecond},
			workload.Result{Tenant: 2, Outcome: workload.OK, Status: 200, Intended: ms(float64(i * 10)), Latency: time.Second},
		)
	}
	g := record(sc, rs).Results(RunInfo{}).Groups[0]
	if g.Latency.Count != 300 || g.Latency.P50 != 20.015 || g.Latency.P99 != 1000.447 || g.Latency.Min != 10 {
		t.Errorf("group latency = %+v, want count 300, min 10, p50 20.015, p99 1000.447", g.Latency)
	}
}

func TestSeriesStep(t *testing.T) {
	cases := []struct {
		d, want time.Duration
	}{
		{0, time.Second},
		{10 * time.Second, time.Second},
		{10 * time.Minute, time.Second},
		{10*time.Minute + time.Millisecond, 2 * time.Second},
		{time.Hour, 10 * time.Second},
		{24 * time.Hour, 5 * time.Minute},
		{1000 * time.Hour, 2 * time.Hour},
	}
	for i, c := range cases {
		if got := SeriesStep(c.d); got != c.want {
			t.Errorf("step %d: SeriesStep(%v) = %v, want %v", i, c.d, got, c.want)
		}
		if n := bucketsFor(c.d, SeriesStep(c.d)); n > maxPlannedBuckets {
			t.Errorf("step %d: %v fills %d buckets, want at most %d", i, c.d, n, maxPlannedBuckets)
		}
	}
}

func TestRecorderSeries(t *testing.T) {
	res := record(recScenario(), miniRun()).Results(RunInfo{})
	s := res.Series
	if s.Step != 1 || s.Limit != 4 {
		t.Fatalf("series step %v limit %d, want 1 s and 4", s.Step, s.Limit)
	}
	// Site 2's 502 ends at 1.5 s + 120 s: the series grows to 122 buckets
	// for every group.
	for _, g := range s.Groups {
		if len(g.Counts) != 122 {
			t.Errorf("group %s has %d buckets, want 122", g.Name, len(g.Counts))
		}
	}
	os := s.Groups[0].Counts
	checks := []struct {
		name string
		got  uint32
		want uint32
	}{
		// Site 1: ok answers end at 51 ms, 102 ms, … 5100 ms (i·51 ms).
		{"other-sites ok in [0,1s)", os[0][workload.OK], 19},
		{"other-sites ok in [1s,2s)", os[1][workload.OK], 20},
		{"other-sites ok in [5s,6s)", os[5][workload.OK], 2},
		{"other-sites rejected in [0,1s)", os[0][workload.Rejected], 1},
		{"other-sites 502 in [121s,122s)", os[121][workload.BackendError], 1},
		{"other-sites client timeout in [4s,5s)", os[4][workload.ClientTimeout], 1},
		{"other-sites dropped in [2s,3s)", os[2][workload.Dropped], 1},
		{"user-x ok in [4s,5s)", s.Groups[1].Counts[4][workload.OK], 4},
		{"user-x rejected in [1s,2s)", s.Groups[1].Counts[1][workload.Rejected], 4},
	}
	for i, c := range checks {
		if c.got != c.want {
			t.Errorf("step %d: %s = %d, want %d", i, c.name, c.got, c.want)
		}
	}
	var sum uint64
	for _, g := range s.Groups {
		for _, b := range g.Counts {
			for _, n := range b {
				sum += uint64(n)
			}
		}
	}
	if sum != res.Totals.Requests {
		t.Errorf("series holds %d results, want all %d", sum, res.Totals.Requests)
	}
	if res.ModelDurationS != 121.5 {
		t.Errorf("model duration = %v s, want 121.5 (the last result's end, past the 10 s of load)", res.ModelDurationS)
	}
}

func TestRecorderBackendAndKeys(t *testing.T) {
	r := NewRecorder(recScenario())
	r.SampleBackend(ms(100), 3, 0)
	r.SampleBackend(ms(600), 8, 5)
	r.SampleBackend(ms(900), 7, 2)
	r.SampleBackend(ms(2100), 8, 11)
	for i := 0; i < 3; i++ {
		in := map[string]int{"x.example.com": 4, "site1.example.com": 1}
		for k := 0; k < 20; k++ {
			in[fmt.Sprintf("k%02d", k)] = 1 + k%3
		}
		if i == 1 {
			in["x.example.com"] = 3
			delete(in, "site1.example.com")
		}
		r.SampleKeys(time.Duration(i)*2*time.Second, in)
	}
	res := r.Results(RunInfo{Backend: statsOf(8, 7, 20, 40*time.Second)})
	wantB := []BackendSample{{T: 0, Busy: 8, Queued: 5}, {T: 2, Busy: 8, Queued: 11}}
	if !reflect.DeepEqual(res.Series.Backend, wantB) {
		t.Errorf("backend series = %+v, want %+v", res.Series.Backend, wantB)
	}
	if b := res.Backend; b.Workers != 8 || b.BusyMax != 8 || b.QueueMax != 20 || b.Utilization != 0.5 {
		t.Errorf("backend = %+v, want 8 workers, busy max 8 (sampled), queue max 20 (pool), utilization 0.5 (40 s busy / 8×10 s)", b)
	}
	keys := res.Series.Keys
	if len(keys) != KeepKeys {
		t.Fatalf("%d key series, want %d", len(keys), KeepKeys)
	}
	if k := keys[0]; k.Key != "x.example.com" || !reflect.DeepEqual(k.T, []float64{0, 2, 4}) || !reflect.DeepEqual(k.InFlight, []int{4, 3, 4}) {
		t.Errorf("busiest key = %+v, want x.example.com at 0,2,4 s with 4,3,4 in flight", k)
	}
	// Then the keys with 3 in flight, by name: k02, k05, …
	if keys[1].Key != "k02" || keys[2].Key != "k05" {
		t.Errorf("keys 2 and 3 = %s, %s; want k02, k05", keys[1].Key, keys[2].Key)
	}
}

func TestRecorderKeysStayBounded(t *testing.T) {
	r := NewRecorder(recScenario())
	for i := 0; i < 50; i++ {
		in := map[string]int{}
		for k := 0; k < 100; k++ {
			in[fmt.Sprintf("site%03d", (i*100+k)%1000)] = 1
		}
		in["hot"] = 5
		r.SampleKeys(time.Duration(i)*100*time.Millisecond, in)
	}
	if len(r.keys) > maxKeyCandidates {
		t.Errorf("following %d keys, want at most %d", len(r.keys), maxKeyCandidates)
	}
	if k := r.Results(RunInfo{}).Series.Keys[0]; k.Key != "hot" || k.InFlight[0] != 5 {
		t.Errorf("busiest key = %s (%v), want hot with 5", k.Key, k.InFlight)
	}
}

func TestRecorderMergeEqualsOneRecorder(t *testing.T) {
	sc := recScenario()
	all := miniRun()
	one := record(sc, all)
	a, b := split(sc, all)
	one.SampleBackend(time.Second, 4, 1)
	a.SampleBackend(time.Second, 4, 0)
	b.SampleBackend(time.Second, 2, 1)
	one.SampleKeys(0, map[string]int{"x.example.com": 4})
	b.SampleKeys(0, map[string]int{"x.example.com": 4})
	a.Merge(b)
	var w1, w2 bytes.Buffer
	info := RunInfo{Engine: "live", Wall: 1500 * time.Millisecond}
	if err := WriteJSON(&w1, one.Results(info)); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&w2, a.Results(info)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(w1.Bytes(), w2.Bytes()) {
		t.Errorf("merged recorders give different results.json:\n%s\nwant\n%s", w2.String(), w1.String())
	}
}

func TestRecorderIgnoresBadIndexes(t *testing.T) {
	r := NewRecorder(recScenario())
	r.Add(&workload.Result{Tenant: 99, Route: 0, Outcome: workload.OK, Status: 200, Latency: time.Millisecond})
	r.Add(&workload.Result{Tenant: -1, Outcome: workload.Error})
	r.Add(&workload.Result{Tenant: 0, Route: 7, Outcome: workload.Outcome(42)})
	r.Add(&workload.Result{Tenant: 0, Route: 0, Outcome: workload.OK, Status: 200, Latency: 5 * time.Hour})
	res := r.Results(RunInfo{})
	if res.Totals.Requests != 4 || res.Totals.Errors != 2 || res.Totals.OK != 2 {
		t.Errorf("totals = %+v, want 4 requests: 2 ok, 2 errors", res.Totals)
	}
	if res.Groups[0].Requests != 2 || res.Routes[0].Requests != 1 {
		t.Errorf("group requests %d, route requests %d; want 2 and 1", res.Groups[0].Requests, res.Routes[0].Requests)
	}
	if got := res.Tenants[0].Latency.Max; got < 3_600_000 || got > 3_604_000 {
		t.Errorf("a 5 h latency shows as %v ms, want about 1 h (the histograms' top)", got)
	}
}

func TestRecorderAddDoesNotAllocate(t *testing.T) {
	r := NewRecorder(recScenario())
	rs := miniRun()
	for i := range rs {
		r.Add(&rs[i])
	}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		r.Add(&rs[i%len(rs)])
		i++
	})
	if allocs != 0 {
		t.Errorf("Add allocates %v times per call on warm buckets, want 0", allocs)
	}
}

func BenchmarkRecorderAdd(b *testing.B) {
	sc := recScenario()
	sc.Tenants[0].Count = 249
	sc.Duration = 10 * time.Minute
	r := NewRecorder(sc)
	n := 250
	rs := make([]workload.Result, 4096)
	for i := range rs {
		o := workload.OK
		if i%50 == 0 {
			o = workload.Rejected
		}
		rs[i] = workload.Result{
			Tenant: int32(i % n), Route: int16(i % 2), Outcome: o, Status: 200,
			Intended: time.Duration(i) * 100 * time.Millisecond, Latency: time.Duration(20+i%200) * time.Millisecond,
		}
	}
	for i := range rs {
		r.Add(&rs[i])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		r.Add(&rs[i&4095])
	}
}

// BenchmarkRecorderAddFleet records results of a fleet of 250 … 250,000
// tenants as the simulator sends them at scale: tenants in random order,
// most answers rejections from the in-flight cap, some ok, some dropped.
// One op is one Add; B/tenant is the heap the recorder holds per tenant
// after one result per tenant and the 65,536 results the ops cycle
// through, histograms included.
func BenchmarkRecorderAddFleet(b *testing.B) {
	for _, n := range []int{250, 25_000, 250_000} {
		b.Run(fmt.Sprintf("tenants=%d", n), func(b *testing.B) {
			sc := fleetScenario(n)
			rs := make([]workload.Result, 1<<16)
			x := uint32(1)
			for i := range rs {
				x ^= x << 13
				x ^= x >> 17
				x ^= x << 5
				res := workload.Result{
					Tenant: int32(x % uint32(n)), Route: int16(x >> 31), Outcome: workload.Rejected, Status: 503,
					Intended: time.Duration(i) * 10 * time.Minute / time.Duration(len(rs)),
				}
				switch x >> 28 {
				case 0, 1, 2:
					res.Outcome, res.Status = workload.OK, 200
					res.Latency, res.Work = time.Duration(20+x%200)*time.Millisecond, time.Duration(10+x%100)*time.Millisecond
				case 3:
					res.Outcome, res.Status = workload.Dropped, 0
				}
				rs[i] = res
			}
			runtime.GC()
			before := heapAlloc()
			r := NewRecorder(sc)
			for i := range n {
				r.Add(&workload.Result{Tenant: int32(i), Outcome: workload.OK, Status: 200, Latency: time.Millisecond})
			}
			for i := range rs {
				r.Add(&rs[i])
			}
			held := heapAlloc() - before
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				r.Add(&rs[i&(len(rs)-1)])
			}
			b.ReportMetric(float64(held)/float64(n), "B/tenant")
			runtime.KeepAlive(r)
		})
	}
}

// fleetScenario is recScenario with n tenants over ten model minutes.
func fleetScenario(n int) *scenarios.Scenario {
	sc := recScenario()
	sc.Tenants[0].Count = n - 1
	sc.Duration = 10 * time.Minute
	return sc
}

// heapAlloc returns the bytes of live heap objects after a collection.
func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkRecorderResults250 builds results.json for the story's shape:
// 250 tenants, ten model minutes, 30,000 results.
func BenchmarkRecorderResults250(b *testing.B) {
	sc := recScenario()
	sc.Tenants[0].Count = 249
	sc.Duration = 10 * time.Minute
	r := NewRecorder(sc)
	for i := 0; i < 30000; i++ {
		r.Add(&workload.Result{Tenant: int32(i % 250), Route: int16(i % 250 / 249), Outcome: workload.OK, Status: 200,
			Intended: time.Duration(i) * 20 * time.Millisecond, Latency: time.Duration(20+i%300) * time.Millisecond})
	}
	b.ReportAllocs()
	for b.Loop() {
		r.Results(RunInfo{Engine: "sim"})
	}
}

func TestRecorderWork(t *testing.T) {
	sc := recScenario()
	rs := miniRun()
	// Site 1's 100 answers used 1..100 ms of a worker; site 2's 502 was a
	// worker killed after 120 s; user-x's four reports took 3 s each.
	for i := range rs {
		switch r := &rs[i]; {
		case r.Tenant == 0:
			r.Work = r.Latency
		case r.Tenant == 1 && r.Outcome == workload.BackendError:
			r.Work = 120 * time.Second
		case r.Tenant == 3 && r.Outcome == workload.OK:
			r.Work = 3 * time.Second
		}
	}
	one := record(sc, rs)
	res := one.Results(RunInfo{Engine: "sim"})
	for i, w := range []struct {
		name      string
		got, want float64
	}{
		{"tenant other-sites-1", res.Tenants[0].WorkS, 5.05}, // 1+2+…+100 ms
		{"tenant other-sites-2", res.Tenants[1].WorkS, 120},
		{"tenant other-sites-3", res.Tenants[2].WorkS, 0},
		{"tenant user-x-1", res.Tenants[3].WorkS, 12},
		{"group other-sites", res.Groups[0].WorkS, 125.05},
		{"group user-x", res.Groups[1].WorkS, 12},
	} {
		if w.got != w.want {
			t.Errorf("step %d: %s: work_s %v, want %v", i+1, w.name, w.got, w.want)
		}
	}

	// results.json names it per tenant and group, and leaves it out where
	// there was none.
	var buf bytes.Buffer
	if err := WriteJSON(&buf, res); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups  []map[string]any `json:"groups"`
		Tenants []map[string]any `json:"tenants"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Tenants[3]["work_s"]; got != 12.0 {
		t.Errorf("tenants[3].work_s = %v, want 12", got)
	}
	if got := doc.Groups[0]["work_s"]; got != 125.05 {
		t.Errorf("groups[0].work_s = %v, want 125.05", got)
	}
	if got, ok := doc.Tenants[2]["work_s"]; ok {
		t.Errorf("tenants[2].work_s = %v, want it left out (no work)", got)
	}

	// Recorders merged and results merged give one run's worker time.
	a, b := split(sc, rs)
	ra := roundTrip(t, a.Results(RunInfo{Engine: "sim"}))
	rb := roundTrip(t, b.Results(RunInfo{Engine: "sim"}))
	merged, err := MergeResults(ra, rb)
	if err != nil {
		t.Fatal(err)
	}
	a.Merge(b)
	ram := a.Results(RunInfo{Engine: "sim"})
	for i := range res.Tenants {
		if g, m, w := ram.Tenants[i].WorkS, merged.Tenants[i].WorkS, res.Tenants[i].WorkS; g != w || m != w {
			t.Errorf("tenant %d: work_s %v (Merge) and %v (MergeResults), want %v", i+1, g, m, w)
		}
	}
	for i := range res.Groups {
		if g, m, w := ram.Groups[i].WorkS, merged.Groups[i].WorkS, res.Groups[i].WorkS; g != w || m != w {
			t.Errorf("group %s: work_s %v (Merge) and %v (MergeResults), want %v", res.Groups[i].Name, g, m, w)
		}
	}
}

// TestRecorderTimeScalePlayed checks that results carry the time scale the
// run played at when the engine says (a live run whose time_scale: auto
// calibration chose it), and the scenario's otherwise.
func TestRecorderTimeScalePlayed(t *testing.T) {
	sc := recScenario()
	if got := record(sc, miniRun()).Results(RunInfo{Engine: "sim"}).TimeScale; got != sc.TimeScale {
		t.Errorf("no scale from the engine: time_scale %v, want the scenario's %v", got, sc.TimeScale)
	}
	res := record(sc, miniRun()).Results(RunInfo{Engine: "live", TimeScale: 0.2, TimeScaleAuto: true})
	if res.TimeScale != 0.2 || !res.TimeScaleAuto {
		t.Errorf("scale 0.2 chosen by the engine: time_scale %v, auto %v; want 0.2, true", res.TimeScale, res.TimeScaleAuto)
	}
}

// TestRecorderResultsTwice calls Results twice: the second counts what the
// first did. The totals start from the results naming no known tenant;
// with more statuses than a tally holds in place, a tenant's 503 among
// those past them must not be added to that tally itself.
func TestRecorderResultsTwice(t *testing.T) {
	rs := miniRun()
	for i, code := range []int16{200, 500, 501, 502, 503, 504, 505} {
		rs = append(rs, workload.Result{Tenant: 99, Outcome: workload.BackendError, Status: code, Intended: ms(float64(10 * i))})
	}
	r := record(recScenario(), rs)
	first := r.Results(RunInfo{Engine: "sim"})
	second := r.Results(RunInfo{Engine: "sim"})
	if !reflect.DeepEqual(first.Totals, second.Totals) {
		t.Errorf("second Results totals %+v, first %+v", second.Totals, first.Totals)
	}
}

// TestRecorderDropped counts dropped results, those Add keeps beside the
// tally and those it cannot (a status, some work), across a wrap of the
// count kept beside it, a merge and two calls of Results.
func TestRecorderDropped(t *testing.T) {
	sc := recScenario()
	a, b := NewRecorder(sc), NewRecorder(sc)
	drop := workload.Result{Tenant: 2, Outcome: workload.Dropped, Intended: ms(10)}
	a.hot[2].dropped = math.MaxUint32 - 1
	for range 3 {
		a.Add(&drop)
	}
	b.Add(&drop)
	b.Add(&workload.Result{Tenant: 2, Outcome: workload.Dropped, Status: 503, Intended: ms(20)})
	b.Add(&workload.Result{Tenant: 2, Outcome: workload.Dropped, Work: ms(1), Intended: ms(30)})
	a.Merge(b)
	want := uint64(math.MaxUint32-1) + 3 + 3
	for step := range 2 {
		res := a.Results(RunInfo{Engine: "sim"})
		for _, c := range []struct {
			name string
			got  Counts
		}{{"tenant", res.Tenants[2].Counts}, {"group", res.Groups[0].Counts}, {"totals", res.Totals}} {
			if c.got.Dropped != want || c.got.Requests != want {
				t.Errorf("Results %d: %s dropped %d of %d requests, want %d of %d", step+1, c.name, c.got.Dropped, c.got.Requests, want, want)
			}
		}
		if got := res.Tenants[2].Counts.Status["503"]; got != 1 {
			t.Errorf("Results %d: tenant 503s = %d, want 1", step+1, got)
		}
		if got, w := res.Tenants[2].WorkS, 0.001; got != w {
			t.Errorf("Results %d: tenant work %v s, want %v", step+1, got, w)
		}
	}
}

// TestRecorderKeysAsFullScan holds the keys SampleKeys follows, with their
// peaks, sums and series, against the rule written out in full: every key
// not followed is weighed against the lowest one followed, found by a scan.
// The samples mix many keys by ones and twos with a few busier ones, so
// that the skip of the scan is both taken and refused, with a merge in the
// middle.
func TestRecorderKeysAsFullScan(t *testing.T) {
	type ref struct {
		peak     int
		sum      int64
		inflight []int32
	}
	want := map[string]*ref{}
	refBusier := func(a, b string) bool {
		ka, kb := want[a], want[b]
		if ka.peak != kb.peak {
			return ka.peak > kb.peak
		}
		if ka.sum != kb.sum {
			return ka.sum > kb.sum
		}
		return a < b
	}
	note := func(k *ref, b, n int) {
		for len(k.inflight) <= b {
			k.inflight = append(k.inflight, 0)
		}
		if int32(n) > k.inflight[b] {
			k.sum += int64(n) - int64(k.inflight[b])
			k.inflight[b] = int32(n)
		}
		k.peak = max(k.peak, n)
	}
	refSample := func(b int, in map[string]int) {
		for _, k := range sortedKeys(in) {
			n := in[k]
			if n <= 0 {
				continue
			}
			if want[k] == nil {
				if len(want) >= maxKeyCandidates {
					low := ""
					for c := range want {
						if low == "" || refBusier(low, c) {
							low = c
						}
					}
					if want[low].peak >= n {
						continue
					}
					delete(want, low)
				}
				want[k] = &ref{}
			}
			note(want[k], b, n)
		}
	}
	check := func(step int, r *Recorder) {
		t.Helper()
		if len(r.keys) != len(want) {
			t.Fatalf("step %d: following %d keys, want %d", step, len(r.keys), len(want))
		}
		for k, w := range want {
			g := r.keys[k]
			if g == nil || g.peak != w.peak || g.sum != w.sum || !slices.Equal(g.inflight, w.inflight) {
				t.Fatalf("step %d: key %s = %+v, want %+v", step, k, g, w)
			}
		}
	}

	rng := rand.New(rand.NewPCG(17, 1))
	r := NewRecorder(recScenario())
	for step := range 400 {
		in := map[string]int{}
		for range 30 {
			in[fmt.Sprintf("site%03d", rng.IntN(500))] = 1 + rng.IntN(2)
		}
		if rng.IntN(10) == 0 {
			in[fmt.Sprintf("hot%d", rng.IntN(5))] = 3 + rng.IntN(4)
		}
		at := time.Duration(step) * 250 * time.Millisecond
		if step == 200 {
			// A merge brings keys of lower peaks back among those
			// followed; the model of it is a fresh recorder's.
			o := NewRecorder(recScenario())
			low := map[string]int{"late-a": 1, "late-b": 1}
			o.SampleKeys(at, low)
			r.Merge(o)
			for k := range want {
				if r.keys[k] == nil {
					delete(want, k)
				}
			}
			for k := range low {
				if r.keys[k] != nil {
					want[k] = &ref{}
					note(want[k], r.bucket(at), 1)
				}
			}
			check(step, r)
		}
		r.SampleKeys(at, in)
		refSample(r.bucket(at), in)
		check(step, r)
	}
}

// TestRecorderGroupHistsAsRecordValue holds the groups' per-bucket
// histograms, which Add builds in a histogram reused from bucket to
// bucket, against histograms that recorded every latency in turn with
// RecordValue: the same counts, count width, encoding and percentiles.
// The latencies reach the histograms' edges (0, below a microsecond, 1 µs,
// 1 h and past it); a bucket holds more than 255 of one value, whose
// count width a later bucket must not keep;
// results go back to buckets already built and past the last one; and the
// same results split over two recorders and merged give the same.
func TestRecorderGroupHistsAsRecordValue(t *testing.T) {
	sc := recScenario()
	rng := rand.New(rand.NewPCG(17, 2))
	var rs []workload.Result
	add := func(tenant int32, intended, latency time.Duration) {
		rs = append(rs, workload.Result{Tenant: tenant, Outcome: workload.OK, Status: 200, Intended: intended, Latency: latency})
	}
	edges := []time.Duration{0, 400 * time.Nanosecond, time.Microsecond, time.Hour - time.Microsecond, time.Hour, time.Hour + time.Second, 5 * time.Hour}
	at := time.Duration(0)
	for i := range 3000 {
		at += time.Duration(rng.ExpFloat64() * float64(3*time.Millisecond))
		lat := time.Duration(float64(30*time.Millisecond) * math.Exp(0.8*rng.NormFloat64()))
		if i%50 == 0 {
			lat = edges[rng.IntN(len(edges))]
		}
		add(int32(rng.IntN(4)), at-lat, lat) // ends at at
	}
	// One bucket of 4,500 results, 280 of them alike.
	for i := range 4500 {
		lat := time.Duration(rng.IntN(1000)) * time.Microsecond
		if i%16 == 0 {
			lat = 42 * time.Millisecond
		}
		add(0, 12*time.Second-lat, lat)
	}
	// The next bucket, with counts of one each; then earlier ones again,
	// and past the series' last bucket.
	for i := range 20 {
		add(1, 13*time.Second, time.Duration(i+1)*time.Millisecond)
	}
	for i := range 200 {
		add(int32(i%4), time.Duration(rng.IntN(9))*time.Second, time.Duration(rng.IntN(900)+1)*time.Millisecond)
	}
	add(2, 100*time.Hour, time.Millisecond)
	add(3, 200*time.Hour, time.Second)

	// The reference: every latency recorded as it comes.
	ref := NewRecorder(sc)
	want := make([]map[int]*hdr.PackedHistogram, len(ref.groups))
	for g := range want {
		want[g] = map[int]*hdr.PackedHistogram{}
	}
	for _, res := range rs {
		g, b := ref.hot[res.Tenant].group, ref.bucket(res.Intended+res.Latency)
		h := want[g][b]
		if h == nil {
			h = newHist()
			want[g][b] = h
		}
		if err := h.RecordValue(micros(res.Latency)); err != nil {
			t.Fatal(err)
		}
	}
	check := func(name string, r *Recorder) {
		t.Helper()
		r.flush()
		for g, gr := range r.groups {
			for b, h := range gr.hists {
				w := want[g][b]
				if w == nil {
					if h != nil {
						t.Errorf("%s: group %s bucket %d has %d values, want none", name, gr.name, b, h.TotalCount())
					}
					continue
				}
				if h == nil {
					t.Errorf("%s: group %s bucket %d has no histogram, want %d values", name, gr.name, b, w.TotalCount())
					continue
				}
				if h.TotalCount() != w.TotalCount() || h.CountWidth() != w.CountWidth() || h.Populated() != w.Populated() || h.Min() != w.Min() || h.Max() != w.Max() {
					t.Errorf("%s: group %s bucket %d: %d values, width %d, %d buckets, min %d, max %d; want %d, %d, %d, %d, %d", name, gr.name, b,
						h.TotalCount(), h.CountWidth(), h.Populated(), h.Min(), h.Max(), w.TotalCount(), w.CountWidth(), w.Populated(), w.Min(), w.Max())
				}
				ps := []float64{0, 1, 50, 90, 99, 99.9, 100}
				if got, wantP := h.ValueAtPercentilesSlice(ps), w.ValueAtPercentilesSlice(ps); !slices.Equal(got, wantP) {
					t.Errorf("%s: group %s bucket %d: percentiles %v = %v, want %v", name, gr.name, b, ps, got, wantP)
				}
				ge, err1 := h.Encode()
				we, err2 := w.Encode()
				if err1 != nil || err2 != nil || !bytes.Equal(ge, we) {
					t.Errorf("%s: group %s bucket %d: encodings differ (errors %v, %v)", name, gr.name, b, err1, err2)
				}
			}
			for b := range want[g] {
				if b >= len(gr.hists) {
					t.Errorf("%s: group %s has %d buckets, want a histogram in bucket %d", name, gr.name, len(gr.hists), b)
				}
			}
		}
	}

	one := NewRecorder(sc)
	for i := range rs {
		one.Add(&rs[i])
	}
	if w := want[0][12]; w.CountWidth() < 2 {
		t.Fatalf("bucket 12 holds %d values at width %d; the test wants a width past 1", w.TotalCount(), w.CountWidth())
	}
	check("one recorder", one)

	a, b := NewRecorder(sc), NewRecorder(sc)
	for i := range rs {
		if i%3 == 0 {
			b.Add(&rs[i])
		} else {
			a.Add(&rs[i])
		}
	}
	a.Merge(b)
	check("merged", a)
}

// TestRecorderTenantHistsAsRecordValue holds the tenants' histograms, which
// take their latencies from a log (Recorder.lat) several times over the
// run, to histograms that recorded every latency as it came; with Merge
// and Results flushing what the log holds at their call.
func TestRecorderTenantHistsAsRecordValue(t *testing.T) {
	sc := fleetScenario(300)
	rng := rand.New(rand.NewPCG(3, 9))
	r, other := NewRecorder(sc), NewRecorder(sc)
	want := make([]*hdr.PackedHistogram, len(r.ten))
	for i := range want {
		want[i] = newHist()
	}
	n := 3*cap(r.lat) + 17 // the log fills three times and holds 17 at the end
	for i := range n {
		ti := int32(rng.IntN(len(want)))
		lat := time.Duration(float64(30*time.Millisecond) * math.Exp(0.9*rng.NormFloat64()))
		res := workload.Result{Tenant: ti, Outcome: workload.OK, Status: 200, Intended: time.Duration(i) * time.Millisecond, Latency: lat}
		into := r
		if i%5 == 0 {
			into = other
		}
		into.Add(&res)
		if err := want[ti].RecordValue(micros(lat)); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.lat) == 0 || len(other.lat) == 0 {
		t.Fatalf("the logs hold %d and %d latencies before Merge; want some in each, so that Merge is seen to flush them", len(r.lat), len(other.lat))
	}
	r.Merge(other)
	res := r.Results(RunInfo{Engine: "sim"})
	for i, w := range want {
		got := r.ten[i].hist
		if got.TotalCount() != w.TotalCount() {
			t.Fatalf("tenant %d: %d latencies, want %d", i, got.TotalCount(), w.TotalCount())
		}
		for _, q := range []float64{0, 50, 90, 99, 99.9, 100} {
			if g, e := got.ValueAtPercentile(q), w.ValueAtPercentile(q); g != e {
				t.Errorf("tenant %d: p%v %d µs, want %d", i, q, g, e)
			}
		}
		if l := latencyOf(w); res.Tenants[i].Latency != l {
			t.Errorf("tenant %d: results' latency %+v, want %+v", i, res.Tenants[i].Latency, l)
		}
	}
}
