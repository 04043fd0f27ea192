package sim

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"stampede/report"
	"stampede/workload"
)

// BenchmarkSimStockBalanceHour plays the stock-balance scenario stretched to
// an hour of model time (about 180,000 requests). One op is one whole run;
// req/s is simulated requests per wall second and allocs/req the heap
// allocations per request. "count" sinks results into a counter, measuring
// the engine alone; "recorder" records them into a report.Recorder with its
// samples, as `stampede run --engine sim` does.
func BenchmarkSimStockBalanceHour(b *testing.B) {
	for _, tc := range []struct {
		name string
		sink func() workload.Sink
	}{
		{"count", func() workload.Sink { return &counter{} }},
		{"recorder", func() workload.Sink {
			sc := stockBalance(4)
			sc.Duration = time.Hour
			return report.NewRecorder(sc)
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			sc := stockBalance(4)
			sc.Duration = time.Hour
			b.ReportAllocs()
			var reqs uint64
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			cpu0 := cpuTime()
			for b.Loop() {
				st := mustRun(b, sc, tc.sink(), Options{})
				reqs += st.Requests
			}
			cpu := cpuTime() - cpu0
			runtime.ReadMemStats(&ms1)
			b.ReportMetric(float64(reqs)/b.Elapsed().Seconds(), "req/s")
			// On a shared machine wall time says little: per CPU second too.
			b.ReportMetric(float64(reqs)/cpu.Seconds(), "req/cpu-s")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(reqs), "allocs/req")
		})
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

// BenchmarkHeap pushes and pops events at random times over a heap of
// about 1000 events.
func BenchmarkHeap(b *testing.B) {
	b.ReportAllocs()
	var h eventHeap
	rng := workload.TenantRand(1, 0)
	now := time.Duration(0)
	for i := range 1000 {
		h.push(event{at: time.Duration(rng.Int64N(int64(time.Second))), seq: uint64(i)})
	}
	seq := uint64(1000)
	for b.Loop() {
		e := h.pop()
		now = e.at
		seq++
		h.push(event{at: now + time.Duration(rng.Int64N(int64(time.Second))), seq: seq})
	}
}
