package live

import (
	"context"
	"math"
	"syscall"
	"testing"
	"time"

	"stampede/scenarios"
	"stampede/workerpool"
)

// cpuTime returns the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// trioScenario is an open load of rate requests per second of wall time
// from tenants sites, on a route that does no work, for d of wall time.
func trioScenario(rate float64, d time.Duration) *scenarios.Scenario {
	const sites = 50
	return &scenarios.Scenario{
		Name: "trio", Duration: d, TimeScale: 1, Seed: 1,
		Backend: scenarios.Backend{Workers: 64, Routes: []scenarios.Route{
			{Name: "page", Path: "/app", Service: workerpool.Constant{D: 0}}}},
		Tenants: []scenarios.TenantGroup{{Group: "sites", Count: sites, Host: "site{i}.example.com", Load: scenarios.Load{
			Model: scenarios.Open, Arrivals: scenarios.Poisson, Rate: rate / sites, Routes: one(0), ClientTimeout: 10 * time.Second}}},
	}
}

// BenchmarkTrio measures the CPU time one request costs the whole built-in
// path, generator, limiting proxy and fake backend together, over loopback
// TCP and in memory: each op is one request of an open load of 500
// requests per second.
func BenchmarkTrio(b *testing.B) {
	for _, tr := range []string{TCP, Memory} {
		b.Run(tr, func(b *testing.B) {
			const rate = 500.0
			sc := trioScenario(rate, time.Duration(float64(b.N)/rate*float64(time.Second)))
			before := cpuTime()
			res, err := runResults(context.Background(), sc, Options{Transport: tr})
			if err != nil {
				b.Fatal(err)
			}
			cpu := cpuTime() - before
			n := float64(res.Totals.Requests)
			b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/req")
			b.ReportMetric(res.SendLateness.P99*1000, "late-p99-µs")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkMaxRate finds the highest wall request rate the live engine
// holds over each transport: open loads through the built-in trio on a
// route that does no work, from 250 requests per second up by steps of
// √2, each step long enough for maxRateSends sends (and at least a
// second), so that its p99 is not the second-worst of a hundred. A step is
// held when its send lateness p99 is under 1 ms, nothing was dropped and
// every request was answered 200. The climb ends when a step fails twice in
// a row (it is tried again once, for a busy machine's moment of noise must
// not end it). It prints 0 only when even the first step could not be held,
// and logs every step's figures. Run it with -benchtime 1x.
func BenchmarkMaxRate(b *testing.B) {
	const maxRateSends = 1000
	for _, tr := range []string{Memory, TCP} {
		b.Run(tr, func(b *testing.B) {
			best := 0.0
			for range b.N {
				for rate, failed := 250.0, 0; rate <= 64000 && failed < 2; {
					d := max(time.Second, time.Duration(maxRateSends/rate*float64(time.Second)).Round(time.Millisecond))
					before := cpuTime()
					res, err := runResults(context.Background(), trioScenario(rate, d), Options{Transport: tr})
					if err != nil {
						b.Fatal(err)
					}
					cpu := cpuTime() - before
					p99, n := res.SendLateness.P99, res.Totals.Requests
					b.Logf("%s: %.0f requests/s for %v: send lateness p99 %.3f ms, %d sent, %d answered 200, %d dropped, %.0f cpu-µs/req",
						tr, rate, d, p99, n, res.Totals.OK, res.Totals.Dropped, float64(cpu.Microseconds())/float64(max(n, 1)))
					if p99 >= 1 || res.Totals.Dropped > 0 || res.Totals.OK != n {
						failed++
						continue
					}
					best = max(best, rate)
					failed = 0
					rate *= math.Sqrt2
				}
			}
			b.ReportMetric(math.Round(best), "max-req/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}
