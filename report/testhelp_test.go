package report

import (
	"io"
	"time"

	"stampede/workerpool"
)

func statsOf(workers, busyMax, queueMax int, busy time.Duration) workerpool.Stats {
	return workerpool.Stats{Workers: workers, BusyMax: busyMax, QueueMax: queueMax, BusyTime: busy}
}

// writeHTML writes r's report.html to w, drawing its charts.
func writeHTML(w io.Writer, r *Results) error {
	charts, err := runCharts(r, formatPNG)
	if err != nil {
		return err
	}
	return writeReport(w, r, charts)
}
