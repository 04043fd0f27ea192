package loadgen

import (
	"time"

	"stampede/workload"
)

// consumeBatch is how long the sink goroutine lets results gather before
// taking them, while they come faster than one per batch: waking it for
// each result would cost a hand-off between goroutines per request.
const consumeBatch = 2 * time.Millisecond

// consume hands results to sink, and calls Sample between them. While
// results come in bunches it takes them a batch at a time (consumeBatch);
// otherwise it wakes for each.
func (d *Driver) consume(start time.Time, results <-chan workload.Result, sink workload.Sink, done chan<- struct{}) {
	defer close(done)
	var tick <-chan time.Time
	if d.opts.Sample != nil {
		every := d.opts.SampleEvery
		if every <= 0 {
			every = max(d.scale.Wall(time.Second), 5*time.Millisecond)
		}
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		tick = ticker.C
	}
	batch := time.NewTimer(consumeBatch)
	batch.Stop()
	defer batch.Stop()
	// One Result reused: sinks must not keep the pointer past Add.
	var r workload.Result
	add := func(res workload.Result) {
		r = res
		d.counters.outcomes[r.Outcome].Add(1)
		if r.Outcome != workload.Dropped {
			d.late.record(time.Duration(r.Late) * time.Microsecond)
		}
		sink.Add(&r)
	}
	n := 0 // results taken at the last wake
	for {
		if n >= 2 {
			batch.Reset(consumeBatch)
			select {
			case <-batch.C:
			case now := <-tick:
				d.opts.Sample(d.scale.Model(now.Sub(start)))
			}
			n = 0
		} else {
			select {
			case res, ok := <-results:
				if !ok {
					return
				}
				add(res)
				n = 1
			case now := <-tick:
				d.opts.Sample(d.scale.Model(now.Sub(start)))
				n = 0
			}
		}
		for more := true; more; {
			select {
			case res, ok := <-results:
				if !ok {
					return
				}
				add(res)
				n++
			default:
				more = false
			}
		}
	}
}
