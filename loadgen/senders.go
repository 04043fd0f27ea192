package loadgen

import (
	"sync"
	"time"

	"stampede/internal/h1"
)

// send is one open-model arrival handed to a sender.
type send struct {
	t     *tenant
	rt    *h1.Client
	route int
	at    time.Duration
	paced bool
}

// senders is the open model's pool of sending goroutines: an arrival goes
// to a sender waiting for work, or, when every sender is busy, to a new
// one, so that a send never waits for an earlier one's answer; a sender
// that is done waits for the next arrival rather than ending. There are
// never more senders than sends in flight at once (bounded by
// DriverOptions.MaxInFlight), and none is started per arrival once the
// pool has grown to the load. The zero value is not usable: see
// newSenders. Only the scheduler calls start; close waits for every send.
type senders struct {
	jobs chan send
	run  func(send)
	wg   sync.WaitGroup
	n    int // senders started
	max  int
}

func newSenders(max int, run func(send)) *senders {
	return &senders{jobs: make(chan send), run: run, max: max}
}

// start hands s to a sender.
func (p *senders) start(s send) {
	select {
	case p.jobs <- s:
		return
	default:
	}
	if p.n >= p.max {
		// Every sender is busy or about to wait: one will take it (the
		// in-flight cap, checked before, leaves one finishing).
		p.jobs <- s
		return
	}
	p.n++
	p.wg.Go(func() {
		p.run(s)
		for s := range p.jobs {
			p.run(s)
		}
	})
}

// close lets the senders end once their sends have, and waits for them.
func (p *senders) close() {
	close(p.jobs)
	p.wg.Wait()
}
