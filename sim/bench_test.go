package sim

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"stampede/report"
	"stampede/scenarios"
	"stampede/workload"
)

// BenchmarkSimStockBalanceHour plays the stock-balance scenario stretched to
// an hour of model time (about 180,000 requests), as benchScale measures
// it: "count" the engine alone, "recorder" into a report.Recorder.
func BenchmarkSimStockBalanceHour(b *testing.B) {
	sc := stockBalance(4)
	sc.Duration = time.Hour
	for _, sink := range []string{"count", "recorder"} {
		b.Run(sink, func(b *testing.B) { benchScale(b, sc, sink == "recorder") })
	}
}

// BenchmarkSimStockBalanceSweep plays the five points of the issue's
// sweep (per_key off, 2, 4, 6, 8) of the 10-minute stock-balance scenario
// into report.Recorders, as `stampede compare --engine sim` does before it
// renders: one op is the whole sweep.
func BenchmarkSimStockBalanceSweep(b *testing.B) {
	b.ReportAllocs()
	var reqs uint64
	cpu0 := cpuTime()
	for b.Loop() {
		for _, limit := range []int{0, 2, 4, 6, 8} {
			sc := stockBalance(limit)
			rec := report.NewRecorder(sc)
			st := mustRun(b, sc, rec, Options{Sampler: rec})
			reqs += st.Requests
		}
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(reqs)/b.Elapsed().Seconds(), "req/s")
	b.ReportMetric(float64(reqs)/cpu.Seconds(), "req/cpu-s")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// cpuTime returns the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// scaleTenants are the fleet sizes BenchmarkSimScale plays.
var scaleTenants = []int{250, 2_500, 25_000, 250_000}

// stockBalanceFleet returns the library's stock-balance scenario with
// tenants in all: the other sites' group grown to tenants-1, the tenant
// with the report unchanged. It bypasses the file's tenant bound, which is
// what the benchmark measures against.
func stockBalanceFleet(tb testing.TB, tenants int) *scenarios.Scenario {
	tb.Helper()
	sc, err := scenarios.LoadWith("../scenarios/stock-balance.yaml", nil)
	if err != nil {
		tb.Fatal(err)
	}
	for i := range sc.Tenants {
		if sc.Tenants[i].Group == "other-sites" {
			sc.Tenants[i].Count = tenants - 1
		}
	}
	return sc
}

// BenchmarkSimScale plays the 10-minute stock-balance scenario with its
// other sites scaled to 250 … 250,000 tenants, each sending as in the file
// (0.2 requests a second), so the model time and the load per tenant are
// the same at every size and the requests grow with the tenants. The 8
// workers stay, so what a request costs is not: at 250 tenants every
// request is served (2 events each); at 2,500 the backlog is full and one
// in three is served: half are rejected by limit_conn behind requests
// whose SYNs the full backlog drops and that send them again until the
// connect timeout, a sixth (3.3 events a request); from 25,000 on the
// 10,000 in-flight cap is full and 93% to 99% of arrivals are dropped at
// once (1.2 and 1.0 events). Compare sizes
// by events/cpu-s, or with BenchmarkSimScaleWorkers, which keeps the work
// per request; served/req and dropped/req say which regime a size is in.
func BenchmarkSimScale(b *testing.B) {
	for _, sinkName := range []string{"count", "recorder"} {
		for _, n := range scaleTenants {
			b.Run(fmt.Sprintf("%s/tenants=%d", sinkName, n), func(b *testing.B) {
				benchScale(b, stockBalanceFleet(b, n), sinkName == "recorder")
			})
		}
	}
}

// BenchmarkSimScaleWorkers is BenchmarkSimScale with the backend's workers
// scaled with the tenants, 8 per 250 as in the file, so that every request
// goes the whole way through the proxy and the pool and, with "recorder",
// into its tenant's, group's and route's histograms: the work per request
// is the same at every size.
func BenchmarkSimScaleWorkers(b *testing.B) {
	for _, sinkName := range []string{"count", "recorder"} {
		for _, n := range []int{2_500, 25_000, 100_000} {
			b.Run(fmt.Sprintf("%s/tenants=%d", sinkName, n), func(b *testing.B) {
				sc := stockBalanceFleet(b, n)
				sc.Backend.Workers = 8 * n / 250
				benchScale(b, sc, sinkName == "recorder")
			})
		}
	}
}

// benchScale runs sc once per op and reports its rates, allocations and
// heap per tenant. req/s is simulated requests per wall second, req/cpu-s
// per CPU second, allocs/req the heap allocations and events/req the
// events (stale ones included) per request, events/cpu-s the events per
// CPU second, redrops/req the SYNs of those events that the syns handled
// without their request (Stats.Redropped); served/req is the share of requests a worker took and
// dropped/req of arrivals dropped at the in-flight cap; B/tenant is
// the heap the first run holds at its end per tenant (its state, with
// record the recorder's too, histograms included), after a collection. Without record
// results go to a counter, measuring the engine alone; with it into a
// report.Recorder with its samples, as `stampede run --engine sim` does,
// which builds no results.json here.
func benchScale(b *testing.B, sc *scenarios.Scenario, record bool) {
	b.ReportAllocs()
	var reqs, events, redropped, held, served, dropped uint64
	var tenants int
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := cpuTime()
	for b.Loop() {
		var sink workload.Sink = &counter{}
		opts := Options{}
		if record {
			rec := report.NewRecorder(sc)
			sink, opts.Sampler = rec, rec
		}
		// The heap is measured on the first op only: a collection per op
		// would weigh on the rates of small runs.
		first := tenants == 0
		var before uint64
		if first {
			before = liveHeap()
		}
		e, err := newEngine(sc, sink, opts)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.run(context.Background()); err != nil {
			b.Fatal(err)
		}
		reqs += e.stats.Requests
		events += e.stats.Events
		redropped += e.stats.Redropped
		served += e.stats.Started
		dropped += e.stats.Outcomes[workload.Dropped]
		if first {
			held = liveHeap() - before
		}
		tenants = len(e.tenants)
		runtime.KeepAlive(e)
		runtime.KeepAlive(sink)
	}
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(reqs)/b.Elapsed().Seconds(), "req/s")
	// On a shared machine wall time says little: per CPU second too (the
	// collections liveHeap forces on the first op included).
	b.ReportMetric(float64(reqs)/cpu.Seconds(), "req/cpu-s")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(reqs), "allocs/req")
	b.ReportMetric(float64(events)/float64(reqs), "events/req")
	b.ReportMetric(float64(redropped)/float64(reqs), "redrops/req")
	b.ReportMetric(float64(events)/cpu.Seconds(), "events/cpu-s")
	b.ReportMetric(float64(served)/float64(reqs), "served/req")
	b.ReportMetric(float64(dropped)/float64(reqs), "dropped/req")
	b.ReportMetric(float64(held)/float64(tenants), "B/tenant")
}

// liveHeap returns the bytes of heap objects a collection it forces finds
// live.
func liveHeap() uint64 {
	runtime.GC()
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	return live[0].Value.Uint64()
}

func TestTenantLayout(t *testing.T) {
	var tn tenant
	if size := unsafe.Sizeof(tn); size%64 != 0 {
		t.Errorf("tenant is %d bytes, not a multiple of 64: set tenantPad to %d", size, (64-(int(size)-tenantPad)%64)%64)
	}
	if size := unsafe.Sizeof(tn); size > 320 {
		t.Errorf("tenant is %d bytes, want at most 320: five cache lines a tenant, as B/tenant of BenchmarkSimScale counts them", size)
	}
	if off := unsafe.Offsetof(tn.arrivals); off != 64 {
		t.Errorf("tenant.arrivals at offset %d, want 64: the first cache line holds the stream, mix and in-flight count", off)
	}
}

// TestTenantKeysInline checks that stock-balance's tenants, with one
// limit_conn key each, hold their keys' headers in the tenant itself.
func TestTenantKeysInline(t *testing.T) {
	e, err := newEngine(stockBalanceFleet(t, 3), &counter{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range e.tenants {
		tn := &e.tenants[i]
		if len(tn.connKeys) == 0 || &tn.connKeys[0] != &tn.keyBuf[len(tn.reqKeys)] {
			t.Errorf("tenant %d: conn keys %q not in its keyBuf", i, tn.connKeys)
		}
		if len(tn.reqKeys) > 0 && &tn.reqKeys[0] != &tn.keyBuf[0] {
			t.Errorf("tenant %d: req keys %q not in its keyBuf", i, tn.reqKeys)
		}
	}
}
