package fakebackend

import (
	"fmt"
	"time"
)

// AbortPolicy says what a worker does when the client of its request goes
// away.
type AbortPolicy uint8

const (
	// Continue is gunicorn's sync worker: it does not notice the client left
	// and finishes the work, holding the worker until then. Requests still in
	// the backlog are run too when their turn comes, since the kernel has
	// queued the whole request.
	Continue AbortPolicy = iota
	// Cancel frees the worker, or drops the queued request, at once.
	Cancel
)

func (a AbortPolicy) String() string {
	if a == Cancel {
		return "cancel"
	}
	return "continue"
}

// ParseAbortPolicy reads "continue" or "cancel".
func ParseAbortPolicy(s string) (AbortPolicy, error) {
	switch s {
	case "", "continue":
		return Continue, nil
	case "cancel":
		return Cancel, nil
	}
	return 0, fmt.Errorf("on_client_abort %q: want continue or cancel", s)
}

// DefaultBacklog is gunicorn's default listen backlog.
const DefaultBacklog = 2048

// Config describes a pool of sync workers.
type Config struct {
	// Workers is the number of worker processes, each serving one request
	// at a time. Zero means 1.
	Workers int
	// Backlog is how many requests may wait for a worker. Zero means
	// DefaultBacklog; a negative value means none may wait.
	Backlog int
	// Timeout is gunicorn's worker timeout: a request still running this
	// long after a worker took it is killed with its worker. Zero means no
	// timeout.
	Timeout time.Duration
	// OnClientAbort says what happens to the work of a client that left.
	// The zero value is Continue.
	OnClientAbort AbortPolicy
}

func (c Config) workers() int {
	if c.Workers <= 0 {
		return 1
	}
	return c.Workers
}

func (c Config) backlog() int {
	switch {
	case c.Backlog == 0:
		return DefaultBacklog
	case c.Backlog < 0:
		return 0
	}
	return c.Backlog
}

// State is where a Job is in the pool.
type State uint8

const (
	Pending   State = iota // not yet given to the pool
	Queued                 // waiting in the backlog
	Running                // a worker has it
	Done                   // the work ended and a response was written
	Killed                 // the worker timeout killed it
	Refused                // the backlog was full
	Cancelled              // its client left and the policy is Cancel
)

var stateNames = [...]string{"pending", "queued", "running", "done", "killed", "refused", "cancelled"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// A Job is one request's work. The caller fills Service (and Data, which the
// pool never reads) and hands it to Pool.Arrive or Pool.ArriveAt; the pool
// fills the rest.
type Job struct {
	Service time.Duration // how long the work takes once a worker has it
	Data    any           // the caller's; the pool does not touch it

	Arrived   time.Time // set by Arrive (not by ArriveAt)
	Started   time.Time // when a worker took it; zero while queued (not set by the At methods)
	Abandoned bool      // its client went away

	arrivedAt time.Duration // Arrived on the pool's model clock
	startedAt time.Duration // Started on the pool's model clock
	state     State
	prev      *Job // backlog links
	next      *Job
}

// State returns where the job is.
func (j *Job) State() State { return j.state }

// ArrivedAt returns when the job arrived on the pool's model clock: the
// time ArriveAt was given, or for Arrive the time since the first time the
// pool was given.
func (j *Job) ArrivedAt() time.Duration { return j.arrivedAt }

// StartedAt returns when a worker took the job on the pool's model clock
// (see ArrivedAt); zero while it is queued.
func (j *Job) StartedAt() time.Duration { return j.startedAt }

// Pool is the pure model of gunicorn's sync worker pool: workers, a FIFO
// backlog and the arbiter's timeout. It holds no clock and starts no
// goroutine: every method takes the current time, and the caller arranges to
// call Finish at the time End reports. That makes one model serve both the
// live backend (driven by real timers) and the simulator (virtual time).
//
// The methods come in two families over one model. Arrive, Finish, Abandon,
// End and Stats take wall-clock time.Time values (the live backend's); the
// At methods take model time as a Duration from an origin of the caller's
// choosing, which spares the simulator a time.Time conversion per call.
// Drive a pool with one family.
//
// A Pool is not safe for concurrent use; the live backend guards it with a
// mutex.
type Pool struct {
	cfg     Config
	workers int
	backlog int
	busy    int
	queued  int
	head    *Job
	tail    *Job
	last    time.Duration // model time of the last state change, for busy time
	started bool          // last is set

	// The time.Time family counts model time from origin, the first time
	// it was given.
	origin    time.Time
	hasOrigin bool

	stats Stats
}

// Stats are a pool's counters. Busy time is the integral of busy workers over
// time, so Utilization is BusyTime / (Workers × elapsed).
type Stats struct {
	Workers   int           `json:"workers"`
	Backlog   int           `json:"backlog"`
	Busy      int           `json:"busy"`
	Queued    int           `json:"queued"`
	BusyMax   int           `json:"busy_max"`
	QueueMax  int           `json:"queue_max"`
	Arrived   uint64        `json:"arrived"`
	Served    uint64        `json:"served"`
	Killed    uint64        `json:"killed"`
	Refused   uint64        `json:"refused"`
	Cancelled uint64        `json:"cancelled"`
	Abandoned uint64        `json:"abandoned"`
	BusyTime  time.Duration `json:"busy_time_ns"`
}

// Utilization returns the mean fraction of workers busy over elapsed, the
// time since the pool's first event: BusyTime / (Workers × elapsed). It is 0
// when elapsed or Workers is not positive.
func (s Stats) Utilization(elapsed time.Duration) float64 {
	if elapsed <= 0 || s.Workers <= 0 {
		return 0
	}
	return float64(s.BusyTime) / (float64(s.Workers) * float64(elapsed))
}

// NewPool returns an empty pool with every worker idle.
func NewPool(cfg Config) *Pool {
	p := &Pool{cfg: cfg, workers: cfg.workers(), backlog: cfg.backlog()}
	p.stats.Workers = p.workers
	p.stats.Backlog = p.backlog
	return p
}

// Config returns the pool's configuration.
func (p *Pool) Config() Config { return p.cfg }

// at converts a time of the time.Time family to the model clock.
func (p *Pool) at(now time.Time) time.Duration {
	if !p.hasOrigin {
		p.origin, p.hasOrigin = now, true
	}
	return now.Sub(p.origin)
}

// advance accounts busy time up to now. Time that goes backwards (two live
// goroutines reading the clock in one order and locking in the other) counts
// as no time.
func (p *Pool) advance(now time.Duration) {
	switch {
	case !p.started:
		p.last, p.started = now, true
	case now > p.last:
		p.stats.BusyTime += time.Duration(p.busy) * (now - p.last)
		p.last = now
	}
}

// Arrive gives j to the pool at now. It returns Running when an idle worker
// took it (j.Started = now), Queued when it waits in the backlog, or Refused
// when the backlog is full.
func (p *Pool) Arrive(now time.Time, j *Job) State {
	s := p.ArriveAt(p.at(now), j)
	j.Arrived = now
	if s == Running {
		j.Started = now
	}
	return s
}

// ArriveAt is Arrive at model time now. It sets j's ArrivedAt and StartedAt
// but not Arrived and Started.
func (p *Pool) ArriveAt(now time.Duration, j *Job) State {
	p.advance(now)
	p.stats.Arrived++
	j.arrivedAt = now
	if p.busy < p.workers {
		p.start(now, j)
		return Running
	}
	if p.queued >= p.backlog {
		j.state = Refused
		p.stats.Refused++
		return Refused
	}
	j.state = Queued
	j.prev, j.next = p.tail, nil
	if p.tail != nil {
		p.tail.next = j
	} else {
		p.head = j
	}
	p.tail = j
	p.queued++
	p.stats.QueueMax = max(p.stats.QueueMax, p.queued)
	return Queued
}

func (p *Pool) start(now time.Duration, j *Job) {
	j.state = Running
	j.startedAt = now
	p.busy++
	p.stats.BusyMax = max(p.stats.BusyMax, p.busy)
}

func (p *Pool) unlink(j *Job) {
	if j.prev != nil {
		j.prev.next = j.next
	} else {
		p.head = j.next
	}
	if j.next != nil {
		j.next.prev = j.prev
	} else {
		p.tail = j.prev
	}
	j.prev, j.next = nil, nil
	p.queued--
}

// work returns how long a running job holds its worker and whether it is
// killed at the end of it.
func (p *Pool) work(j *Job) (time.Duration, bool) {
	if t := p.cfg.Timeout; t > 0 && j.Service > t {
		return t, true
	}
	return j.Service, false
}

// End returns when a running job leaves its worker and whether it is killed
// then: Started+Service, or Started+Timeout if that comes first. Work that
// ends exactly at the timeout is done, not killed: like gunicorn's arbiter,
// the pool kills a worker only when it has been busy longer than Timeout.
func (p *Pool) End(j *Job) (at time.Time, killed bool) {
	d, killed := p.work(j)
	return j.Started.Add(d), killed
}

// EndAt is End on the model clock: StartedAt plus the work.
func (p *Pool) EndAt(j *Job) (at time.Duration, killed bool) {
	d, killed := p.work(j)
	return j.startedAt + d, killed
}

// Finish ends a running job at now, the time End reported, marking it Done or
// Killed, and gives the freed worker to the head of the backlog. It returns
// that job (now Running, Started = now) or nil. Finish on a job that is not
// running does nothing and returns nil.
func (p *Pool) Finish(now time.Time, j *Job) (next *Job) {
	if j.state != Running {
		return nil
	}
	next = p.FinishAt(p.at(now), j)
	if next != nil {
		next.Started = now
	}
	return next
}

// FinishAt is Finish at model time now, the time EndAt reported.
func (p *Pool) FinishAt(now time.Duration, j *Job) (next *Job) {
	if j.state != Running {
		return nil
	}
	p.advance(now)
	if _, killed := p.work(j); killed {
		j.state = Killed
		p.stats.Killed++
	} else {
		j.state = Done
		p.stats.Served++
	}
	return p.free(now)
}

func (p *Pool) free(now time.Duration) *Job {
	p.busy--
	next := p.head
	if next == nil {
		return nil
	}
	p.unlink(next)
	p.start(now, next)
	return next
}

// Abandon records at now that j's client went away. Under Continue nothing
// else changes: the work goes on. Under Cancel a queued job leaves the
// backlog and a running one frees its worker, which takes the head of the
// backlog; that job is returned (now Running), or nil.
func (p *Pool) Abandon(now time.Time, j *Job) (next *Job) {
	if j.Abandoned || j.state == Pending || j.state > Running {
		return nil
	}
	next = p.AbandonAt(p.at(now), j)
	if next != nil {
		next.Started = now
	}
	return next
}

// AbandonAt is Abandon at model time now.
func (p *Pool) AbandonAt(now time.Duration, j *Job) (next *Job) {
	if j.Abandoned || j.state == Pending || j.state > Running {
		return nil
	}
	j.Abandoned = true
	p.stats.Abandoned++
	if p.cfg.OnClientAbort != Cancel {
		return nil
	}
	p.advance(now)
	p.stats.Cancelled++
	if j.state == Queued {
		p.unlink(j)
		j.state = Cancelled
		return nil
	}
	j.state = Cancelled
	return p.free(now)
}

// Stats returns the counters, with busy time accounted up to now.
func (p *Pool) Stats(now time.Time) Stats { return p.StatsAt(p.at(now)) }

// StatsAt is Stats at model time now.
func (p *Pool) StatsAt(now time.Duration) Stats {
	p.advance(now)
	s := p.stats
	s.Busy, s.Queued = p.busy, p.queued
	return s
}

// Busy returns the number of busy workers and of queued jobs.
func (p *Pool) Busy() (busy, queued int) { return p.busy, p.queued }
