package report

import (
	"fmt"
	"testing"
	"time"

	"stampede/workload"
)

// BenchmarkResultsAndCharts builds results.json and draws the run's charts
// (PNG) at fleet sizes: ten results per tenant over ten model minutes.
func BenchmarkResultsAndCharts(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("tenants=%d", n), func(b *testing.B) {
			sc := recScenario()
			sc.Tenants[0].Count = n - 1
			sc.Duration = 10 * time.Minute
			r := NewRecorder(sc)
			for i := 0; i < 10*n; i++ {
				o := workload.OK
				if i%40 == 0 {
					o = workload.Rejected
				}
				r.Add(&workload.Result{Tenant: int32(i % n), Route: int16(i % 2), Outcome: o, Status: 200,
					Intended: time.Duration(i) * (10 * time.Minute) / time.Duration(10*n), Latency: time.Duration(20+i%300) * time.Millisecond})
			}
			b.ReportAllocs()
			for b.Loop() {
				res := r.Results(RunInfo{Engine: "sim"})
				if _, err := runCharts(res, formatPNG); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
