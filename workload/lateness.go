package workload

import "time"

// Lateness summarises when an engine sent its requests against their
// intended times, in wall time: how far behind its schedule the generator
// itself ran. Latencies count from the intended time whatever this says, so
// a late generator does not hide a slow server; but lateness well above the
// time scale's resolution says the machine could not play the scenario
// that fast. Negative values are sends made early (see clock.Pacer), from
// which latency counts instead.
type Lateness struct {
	Sends uint64        // requests sent
	Early uint64        // sent before their intended time
	P50   time.Duration // median lateness
	P90   time.Duration
	P99   time.Duration
	Max   time.Duration
}
