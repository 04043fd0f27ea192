package report

import (
	"time"

	"stampede/fakebackend"
)

func statsOf(workers, busyMax, queueMax int, busy time.Duration) fakebackend.Stats {
	return fakebackend.Stats{Workers: workers, BusyMax: busyMax, QueueMax: queueMax, BusyTime: busy}
}
