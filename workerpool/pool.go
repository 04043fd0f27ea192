package workerpool

import (
	"math/rand/v2"
	"time"
)

// SYNRetries is Linux's default net.ipv4.tcp_syn_retries: how many times a
// client's kernel sends a dropped SYN again before connect fails.
const SYNRetries = 6

// SYNRetry is Linux's SYN retransmission schedule, the one rule both engines
// and every transport follow: it returns how long a client's kernel waits
// after the n-th transmission of a connection attempt's SYN (n counts from
// 1, the first SYN) before it sends the SYN again, and whether it sends it
// again at all. The first wait is one second (TCP_TIMEOUT_INIT) and each
// one doubles it; after SYNRetries retransmissions the kernel waits once
// more and connect fails with ETIMEDOUT. A SYN that never fits is thus sent
// at 0, 1, 3, 7, 15, 31 and 63 s, and connect fails at 127 s. An n below 1
// is taken as 1.
func SYNRetry(n int) (wait time.Duration, again bool) {
	n = max(n, 1)
	return time.Second << min(n-1, SYNRetries), n <= SYNRetries
}

// ArbiterTick is how often gunicorn's arbiter looks for workers past their
// timeout: its main loop sleeps in select(2) for one second between two
// looks.
const ArbiterTick = time.Second

// State is where a Job is in the pool.
type State uint8

const (
	Pending   State = iota // not yet given to the pool
	Queued                 // waiting in the backlog
	Running                // a worker has it
	Done                   // the work ended and a response was written
	Killed                 // the worker timeout killed it
	Refused                // the backlog was full and Overflow is Reset
	Cancelled              // its client left and the policy is Cancel
	Dropped                // the backlog was full and its SYN was dropped: see Job.NextSYN
)

var stateNames = [...]string{"pending", "queued", "running", "done", "killed", "refused", "cancelled", "dropped"}

func (s State) String() string { return enumName(stateNames[:], s, "state") }

// A Job is one request's work. The caller fills Service (and Data, which the
// pool never reads) and hands it to Pool.Arrive; the pool fills the rest.
type Job struct {
	Service   time.Duration // how long the work takes once a worker has it
	Data      any           // the caller's; the pool does not touch it
	Abandoned bool          // its client went away

	arrivedAt time.Duration
	startedAt time.Duration
	synAt     time.Duration // when its SYN was last sent
	syns      int           // SYNs sent
	worker    int32
	state     State
	prev      *Job // backlog links
	next      *Job
}

// State returns where the job is.
func (j *Job) State() State { return j.state }

// ArrivedAt returns when the job entered the pool: the time of the Arrive
// that queued or started it.
func (j *Job) ArrivedAt() time.Duration { return j.arrivedAt }

// StartedAt returns when a worker took the job; zero while it is queued.
func (j *Job) StartedAt() time.Duration { return j.startedAt }

// NextSYN returns, for a Dropped job, when its client's kernel sends the
// SYN again (call Arrive then), or with again false when it gives up
// instead and connect fails with ETIMEDOUT at that time (see SYNRetry).
func (j *Job) NextSYN() (at time.Duration, again bool) {
	wait, again := SYNRetry(j.syns)
	return j.synAt + wait, again
}

// SYNs returns how many times the job's SYN was sent.
func (j *Job) SYNs() int { return j.syns }

// SetSYNs records that the job's SYN was sent n times, the last at last,
// as Arrive would have: for a Dropped job whose retransmissions its caller
// handed to Redrop, which does not see the job, rather than to Arrive.
func (j *Job) SetSYNs(n int, last time.Duration) { j.syns, j.synAt = n, last }

// worker is one worker process of the pool.
type worker struct {
	busy   int           // requests it serves now
	served int           // requests it finished since it booted
	limit  int           // requests after which it is recycled; 0 never
	ready  time.Duration // booting until then
	exited bool          // booting: not ready before ready
}

// Pool is the pure model of gunicorn's worker pool behind the kernel's listen
// backlog: workers (sync, or gthread with threads), the accept queue and
// what happens when it is full, the arbiter's timeout on its once-a-second
// tick, the boot of a replacement worker and max_requests recycling. It holds
// no clock and starts no goroutine: every method takes the current model
// time as a Duration from an origin of the caller's choosing, times passed
// must not go backwards, and the caller arranges to call Finish at the time
// End reports and Wake at the time NextWake reports. That makes one model
// serve both the live backend (driven by real timers) and the simulator
// (virtual time).
//
// A Pool is not safe for concurrent use; the live backend guards it with a
// mutex.
type Pool struct {
	cfg     Config
	threads int
	queue   int
	workers []worker
	cursor  int // round robin over the workers
	busy    int // requests being served
	free    int // threads that may take a request now: see contrib
	booting int
	queued  int
	head    *Job
	tail    *Job
	last    time.Duration // time of the last state change, for busy time
	started bool          // last is set
	phase   time.Duration // the arbiter ticks at phase + k·ArbiterTick
	rng     *rand.Rand
	instant time.Duration // the time of the last Arrive
	room    bool          // the backlog had room at the first Arrive at instant
	arrived bool          // instant is set

	// OnStart, when not nil, is called with every job a worker takes, at
	// the end of the method during which it took it (Arrive, Finish,
	// Abandon or Wake): the caller learns there of queued jobs that start.
	// It must not call the pool's methods other than End.
	OnStart func(j *Job)
	starts  []*Job

	stats Stats
}

// Stats are a pool's counters. Busy time is the integral of requests being
// served over time, so Utilization is BusyTime / (Workers × Threads ×
// elapsed).
type Stats struct {
	Workers   int           `json:"workers"`
	Threads   int           `json:"threads"`
	Backlog   int           `json:"backlog"` // the listen(2) backlog: Backlog+1 may wait in the kernel
	Busy      int           `json:"busy"`
	Queued    int           `json:"queued"`
	Booting   int           `json:"booting"`
	BusyMax   int           `json:"busy_max"`
	QueueMax  int           `json:"queue_max"`
	Arrived   uint64        `json:"arrived"`
	Served    uint64        `json:"served"`
	Killed    uint64        `json:"killed"`
	Refused   uint64        `json:"refused"`
	SYNDrops  uint64        `json:"syn_drops"` // SYNs dropped on a full backlog
	GaveUp    uint64        `json:"gave_up"`   // connection attempts abandoned while Dropped
	Recycled  uint64        `json:"recycled"`  // workers recycled by max_requests
	Cancelled uint64        `json:"cancelled"`
	Abandoned uint64        `json:"abandoned"`
	BusyTime  time.Duration `json:"busy_time_ns"`
}

// Utilization returns the mean fraction of the pool's capacity (Workers ×
// Threads) busy over elapsed, the time since the pool's first event. It is
// 0 when elapsed or Workers is not positive.
func (s Stats) Utilization(elapsed time.Duration) float64 {
	if elapsed <= 0 || s.Workers <= 0 {
		return 0
	}
	return float64(s.BusyTime) / (float64(s.Workers) * float64(max(s.Threads, 1)) * float64(elapsed))
}

// NewPool returns an empty pool with every worker ready and idle.
func NewPool(cfg Config) *Pool {
	p := &Pool{cfg: cfg, threads: cfg.threads(), queue: cfg.queue()}
	p.workers = make([]worker, cfg.workers())
	p.free = len(p.workers) * p.threads
	p.rng = rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x6a09e667f3bcc909))
	p.phase = time.Duration(p.rng.Int64N(int64(ArbiterTick)))
	for i := range p.workers {
		p.workers[i].limit = p.limit()
	}
	p.stats.Workers = len(p.workers)
	p.stats.Threads = p.threads
	p.stats.Backlog = cfg.ListenBacklog()
	return p
}

// limit draws a new worker's max_requests.
func (p *Pool) limit() int {
	if p.cfg.MaxRequests <= 0 {
		return 0
	}
	return p.cfg.MaxRequests + p.rng.IntN(max(p.cfg.MaxRequestsJitter, 0)+1)
}

// Workers returns how many worker processes the pool has.
func (p *Pool) Workers() int { return len(p.workers) }

// Threads returns how many requests each worker serves at once.
func (p *Pool) Threads() int { return p.threads }

// Config returns the pool's configuration.
func (p *Pool) Config() Config { return p.cfg }

// advance accounts busy time up to now and readies the workers whose boot
// ended by now, each taking jobs from the backlog at the time it became
// ready. Time that goes backwards (two live goroutines reading the clock in
// one order and locking in the other) counts as no time.
func (p *Pool) advance(now time.Duration) {
	for p.booting > 0 {
		wi, at := p.nextReady()
		if at > now {
			break
		}
		p.account(at)
		w := &p.workers[wi]
		w.exited = false
		p.booting--
		p.free += p.contrib(w)
		for p.contrib(w) > 0 && p.head != nil {
			j := p.head
			p.unlink(j)
			p.start(at, j, wi)
		}
	}
	p.account(now)
}

// retiring reports whether w has taken its last request.
func (w *worker) retiring() bool { return w.limit > 0 && w.served+w.busy >= w.limit }

// contrib returns how many requests w may take now.
func (p *Pool) contrib(w *worker) int {
	if w.exited || w.retiring() {
		return 0
	}
	return p.threads - w.busy
}

// account adds busy time up to now.
func (p *Pool) account(now time.Duration) {
	switch {
	case !p.started:
		p.last, p.started = now, true
	case now > p.last:
		p.stats.BusyTime += time.Duration(p.busy) * (now - p.last)
		p.last = now
	}
}

// nextReady returns the booting worker ready first. One is booting.
func (p *Pool) nextReady() (int, time.Duration) {
	wi := -1
	for i := range p.workers {
		if x := &p.workers[i]; x.exited && (wi < 0 || x.ready < p.workers[wi].ready) {
			wi = i
		}
	}
	return wi, p.workers[wi].ready
}

// NextWake returns when the next booting worker becomes ready, if one is
// booting: call Wake then so that it takes the jobs waiting for it.
func (p *Pool) NextWake() (at time.Duration, ok bool) {
	if p.booting == 0 {
		return 0, false
	}
	_, at = p.nextReady()
	return at, true
}

// Wake brings the pool to now: workers whose boot ended take waiting jobs.
func (p *Pool) Wake(now time.Duration) {
	p.advance(now)
	p.flush()
}

// flush hands the jobs started during a call to OnStart.
func (p *Pool) flush() {
	if len(p.starts) == 0 {
		return
	}
	if p.OnStart != nil {
		for _, j := range p.starts {
			p.OnStart(j)
		}
	}
	clear(p.starts)
	p.starts = p.starts[:0]
}

// Free returns how many more requests the ready workers can take now.
func (p *Pool) Free(now time.Duration) int {
	p.advance(now)
	p.flush()
	return p.free
}

// Arrive gives j to the pool at now: its connection attempt, or a
// retransmission of it when j is Dropped. It returns Running when a worker
// took it, Queued when it waits in the backlog, and when the backlog is
// full Refused (Overflow Reset) or Dropped (Overflow Drop: the client's
// kernel tries again at j.NextSYN()).
func (p *Pool) Arrive(now time.Duration, j *Job) State {
	defer p.flush()
	p.advance(now)
	if j.state == Pending {
		p.stats.Arrived++
	}
	j.syns++
	j.synAt = now
	if !p.arrived || now != p.instant {
		p.instant, p.room, p.arrived = now, p.queued < p.queue, true
	}
	if p.free > 0 {
		j.arrivedAt = now
		p.start(now, j, -1)
		return Running
	}
	// Retransmitted SYNs that were dropped together are sent again
	// together, and Linux answers every one of the burst that finds the
	// accept queue with room, before the handshakes' last ACKs fill it:
	// their clients are connected, and the kernel moves them into the
	// queue as it frees (measured: after 30 connections at once into 2
	// workers and --backlog 8, 12 of the 19 dropped connect on their
	// first retransmission, 7 on their second, none later).
	if p.queued >= p.queue && (j.syns == 1 || !p.room) {
		if p.cfg.Overflow == Reset {
			j.state = Refused
			p.stats.Refused++
			return Refused
		}
		j.state = Dropped
		p.stats.SYNDrops++
		return Dropped
	}
	j.arrivedAt = now
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

// Redrop is Arrive at now of a retransmitted SYN of a Dropped job, told
// without the job, for a caller that keeps a full backlog's dropped jobs
// out of its hands until one may get in. When Arrive(now, j) would drop
// the SYN again it counts the drop as Arrive does and returns true; the
// caller records the SYN with j.SetSYNs(j.SYNs()+1, now) when it next
// looks at j. Otherwise it returns false, having brought the pool to now
// as Arrive does before it decides, and the caller calls Arrive(now, j),
// which decides as it would have.
func (p *Pool) Redrop(now time.Duration) bool {
	if p.booting > 0 {
		p.advance(now)
		p.flush()
	} else {
		p.account(now) // advance(now), which has no boot to end
	}
	if !p.arrived || now != p.instant {
		p.instant, p.room, p.arrived = now, p.queued < p.queue, true
	}
	if p.free > 0 || p.queued < p.queue || p.room || p.cfg.Overflow == Reset {
		return false
	}
	p.stats.SYNDrops++
	return true
}

// start gives j to worker wi, or when wi is negative to the next worker
// round the ring that may take it. One may.
func (p *Pool) start(now time.Duration, j *Job, wi int) {
	for n := len(p.workers); wi < 0 && n > 0; n-- {
		if p.contrib(&p.workers[p.cursor]) > 0 {
			wi = p.cursor
		}
		p.cursor = (p.cursor + 1) % len(p.workers)
	}
	w := &p.workers[wi]
	before := p.contrib(w)
	w.busy++
	p.free += p.contrib(w) - before
	j.state = Running
	j.startedAt = now
	j.worker = int32(wi)
	p.busy++
	p.stats.BusyMax = max(p.stats.BusyMax, p.busy)
	p.starts = append(p.starts, j)
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

// KillTick returns the arbiter tick at which a sync worker that took a job
// at start is killed if still on it: the first tick more than Timeout
// after start, since gunicorn kills a worker whose heartbeat is older than
// its timeout. It returns false when the timeout kills nothing: none is
// set, or the workers are gthread.
func (p *Pool) KillTick(start time.Duration) (time.Duration, bool) {
	t := p.cfg.Timeout
	if t <= 0 || p.threads > 1 {
		return 0, false
	}
	due := start + t - p.phase // the tick comes after this
	k := due / ArbiterTick     // rounds towards zero
	if due < 0 && due%ArbiterTick != 0 {
		k-- // floor
	}
	return p.phase + (k+1)*ArbiterTick, true
}

// End returns when a running job leaves its worker and whether it is killed
// then: StartedAt+Service, or the arbiter tick that kills it if that comes
// first (see Config.Timeout). Work that ends at that tick is done, not
// killed.
func (p *Pool) End(j *Job) (at time.Duration, killed bool) {
	end := j.startedAt + j.Service
	if k, ok := p.KillTick(j.startedAt); ok && k < end {
		return k, true
	}
	return end, false
}

// Finish ends a running job at now, the time End reported, marking it Done or
// Killed. A killed worker, or one that reached its max_requests, exits and
// is replaced after Config.Boot; a freed thread takes the head of the
// backlog. Finish on a job that is not running does nothing.
func (p *Pool) Finish(now time.Duration, j *Job) {
	if j.state != Running {
		return
	}
	defer p.flush()
	p.advance(now)
	if _, killed := p.End(j); killed {
		j.state = Killed
		p.stats.Killed++
	} else {
		j.state = Done
		p.stats.Served++
	}
	p.release(now, j)
}

// release frees j's thread at now, a request having ended on it: a killed
// worker exits, one that served its last request exits once its other
// requests ended, and any other takes the head of the backlog.
func (p *Pool) release(now time.Duration, j *Job) {
	wi := int(j.worker)
	w := &p.workers[wi]
	before := p.contrib(w)
	w.busy--
	p.busy--
	if j.state != Killed {
		w.served++
	}
	p.free += p.contrib(w) - before
	switch {
	case j.state == Killed:
		// The arbiter kills the whole process: a sync worker has no
		// other request.
		p.exit(now, w)
	case w.retiring():
		if w.busy == 0 {
			p.stats.Recycled++
			p.exit(now, w)
		}
	case p.head != nil:
		next := p.head
		p.unlink(next)
		p.start(now, next, wi)
	}
}

// exit takes w out until a replacement has booted, Config.Boot after now.
func (p *Pool) exit(now time.Duration, w *worker) {
	p.free -= p.contrib(w)
	p.booting++
	w.exited = true
	w.ready = now + max(p.cfg.Boot, 0)
	w.served = 0
	w.limit = p.limit()
	if w.ready <= now {
		p.advance(now)
	}
}

// Abandon records at now that j's client went away. Under Continue nothing
// else changes: the work goes on. Under Cancel a queued job leaves the
// backlog and a running one frees its thread, which takes the head of the
// backlog. A Dropped job's connection attempt ends whatever the policy
// (the client closed it, or its kernel gave up), counted as GaveUp.
func (p *Pool) Abandon(now time.Duration, j *Job) {
	if j.Abandoned || j.state != Queued && j.state != Running && j.state != Dropped {
		return
	}
	j.Abandoned = true
	p.stats.Abandoned++
	if j.state == Dropped {
		p.stats.GaveUp++
		return
	}
	if p.cfg.OnClientAbort != Cancel {
		return
	}
	defer p.flush()
	p.advance(now)
	p.stats.Cancelled++
	if j.state == Queued {
		p.unlink(j)
		j.state = Cancelled
		return
	}
	j.state = Cancelled
	p.release(now, j)
}

// Stats returns the counters, with busy time accounted up to now.
func (p *Pool) Stats(now time.Duration) Stats {
	p.advance(now)
	p.flush()
	s := p.stats
	s.Busy, s.Queued, s.Booting = p.busy, p.queued, p.booting
	return s
}

// Busy returns the number of requests being served and of queued jobs.
func (p *Pool) Busy() (busy, queued int) { return p.busy, p.queued }
