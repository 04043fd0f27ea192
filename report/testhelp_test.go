package report

import (
	"time"

	"stampede/workerpool"
)

func statsOf(workers, busyMax, queueMax int, busy time.Duration) workerpool.Stats {
	return workerpool.Stats{Workers: workers, BusyMax: busyMax, QueueMax: queueMax, BusyTime: busy}
}
