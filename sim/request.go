package sim

import (
	"math"
	"time"

	"stampede/limit"
	"stampede/workerpool"
	"stampede/workload"
)

// A request's way through the simulated proxy and backend, event by event:
// the client sends it (arrive, send), limit_req and limit_conn admit it
// (start, connStage), the backend's listen queue and workers take it
// (connect, started), and it ends (end, timeout, finish) with its result.

// The statuses the simulated proxy answers with, as net/http numbers them.
const (
	statusOK             = 200
	statusBadGateway     = 502
	statusGatewayTimeout = 504
)

// request is one request on its way. Requests are pooled: one is reused
// once its result is out and its job has left the pool.
type request struct {
	job      workerpool.Job // job.Data is the request itself
	slots    limit.Slots
	t        *tenant
	intended time.Duration // when the client meant to send it
	client   time.Duration // the client's deadline; never when none
	read     time.Duration // the proxy's read deadline; never until connected upstream
	connect  time.Duration // the proxy's connect deadline; never when none or connected
	ev       uint64        // seq of the one pending event that is not stale; 0 none
	user     int32         // closed model: the user; -1 for open
	id       int32         // the request's place in the engine's chunks
	next     int32         // free list: the next free request's id + 1; 0 none
	keys     int32         // its visitor's and route's keys in t.keys; -1 t's own
	route    int16
	done     bool // the result is out
	delayed  bool // limit_req held it (Result.Delayed)
	inUse    bool // allocated
}

// connKeys returns r's limit_conn keys: its visitor's, for its route's
// location.
func (r *request) connKeys() []string {
	if r.keys < 0 {
		return r.t.connKeys
	}
	return r.t.keys[r.keys].conn
}

// alloc returns a clean request from the pool.
func (e *engine) alloc() *request {
	if e.free == 0 {
		if len(e.chunks) >= math.MaxInt32/chunkSize {
			panic("sim: too many requests in flight")
		}
		chunk := make([]request, chunkSize)
		for i := len(chunk) - 1; i >= 0; i-- {
			chunk[i].id = int32(len(e.chunks)*chunkSize + i)
			chunk[i].next = e.free
			e.free = chunk[i].id + 1
		}
		e.chunks = append(e.chunks, chunk)
	}
	r := e.request(e.free - 1)
	e.free = r.next
	r.next = 0
	r.inUse = true
	return r
}

// release returns r to the pool once its result is out and its job has
// left the backend.
func (e *engine) release(r *request) {
	if !r.done {
		return
	}
	if s := r.job.State(); s == workerpool.Queued || s == workerpool.Running {
		return
	}
	*r = request{id: r.id, next: e.free}
	e.free = r.id + 1
}

// chunkSize is how many requests the pool allocates at once.
const chunkSize = 256

// request returns the request of id id.
func (e *engine) request(id int32) *request {
	return &e.chunks[id/chunkSize][id%chunkSize]
}

// arrive handles an open-model arrival at now.
func (e *engine) arrive(t *tenant, now time.Duration) {
	route := t.arrivals.RouteOf(t.mix, t.rng())
	service := e.dists[route].Sample(t.rng())
	if !workload.Admit(int64(t.inFlight), int64(t.cap), int64(e.open), int64(e.maxOpen)) {
		e.res = workload.Result{Tenant: t.index, Route: int16(route), Outcome: workload.Dropped, Intended: now}
		e.emit()
		return
	}
	t.inFlight++
	e.open++
	t.arrived++
	e.start(t, -1, t.arrived-1, route, service, now)
}

// send handles a closed-model user's request at now.
func (e *engine) send(t *tenant, u int32, now time.Duration) {
	route := t.mix.Pick(t.rng())
	service := e.dists[route].Sample(t.rng())
	e.start(t, u, e.users[u].k, route, service, now)
}

// start runs a new request through limit_req.
func (e *engine) start(t *tenant, u int32, visitor int, route int, service time.Duration, now time.Duration) {
	r := e.alloc()
	r.t, r.user, r.route, r.intended = t, u, int16(route), now
	reqKeys := t.reqKeys
	r.keys = -1
	if len(t.keys) > 0 { // the visitor's address, as scenarios.Tenant.VisitorAddr maps it, and the route's location
		i := 0
		if visitors := len(t.keys) / e.keyRoutes; visitors > 1 {
			i = visitor % visitors * e.keyRoutes
		}
		if e.keyRoutes > 1 {
			i += route
		}
		reqKeys, r.keys = t.keys[i].req, int32(i)
	}
	r.job = workerpool.Job{Service: service, Data: r}
	r.client, r.read, r.connect = never, never, never
	if t.timeout > 0 {
		r.client = now + t.timeout
	}
	pol := e.policy
	if e.routePol != nil {
		pol = e.routePol[route]
	}
	if len(pol.Req) > 0 {
		d := pol.ReqStage(at(now), reqKeys)
		switch {
		case d.Verdict == limit.Rejected:
			e.finish(r, now, workload.Rejected, d.Status)
			e.release(r)
			return
		case d.Delay > 0:
			e.stats.Delayed++
			r.delayed = true
			e.schedule(r, now+d.Delay, evDelayEnd)
			return
		}
	}
	e.connStage(r, now)
}

// connStage runs r through limit_conn and hands it to the backend.
func (e *engine) connStage(r *request, now time.Duration) {
	pol := e.policy
	if e.routePol != nil {
		pol = e.routePol[r.route]
	}
	if len(pol.Conn) > 0 {
		slots, d := pol.ConnStage(r.connKeys())
		if d.Verdict == limit.Rejected {
			e.finish(r, now, workload.Rejected, d.Status)
			e.release(r)
			return
		}
		r.slots = slots
	}
	if e.connTO > 0 {
		r.connect = now + e.connTO
	}
	e.connect(r, now)
}

// connect sends r's connection attempt to the backend at now: its first SYN
// or, after the full backlog dropped one, the next on the kernel's
// schedule. The proxy's connect timeout runs from the first; once the
// backend's backlog holds the connection, its read timeout runs instead.
func (e *engine) connect(r *request, now time.Duration) {
	if e.readTO > 0 {
		r.read = now + e.readTO
	}
	switch e.pool.Arrive(now, &r.job) {
	case workerpool.Refused:
		r.read = never
		e.finish(r, now, workload.BackendError, statusBadGateway)
		e.release(r)
	case workerpool.Dropped:
		r.read = never
		e.stats.SYNDrops++
		if at, again := r.job.NextSYN(); again {
			e.schedule(r, at, evSYN)
		} else {
			e.schedule(r, at, evConnectFail)
		}
	case workerpool.Running:
		r.connect = never
	case workerpool.Queued:
		r.connect = never
		e.stats.Waited++
		e.schedule(r, never, evEnd)
	}
	e.flushStarts()
}

// flushStarts handles the jobs the pool started during the last call, in
// the order it started them.
func (e *engine) flushStarts() {
	for i, j := range e.starts {
		e.starts[i] = nil
		e.started(j)
	}
	e.starts = e.starts[:0]
}

// armWake schedules an evWake for the pool's next booting worker, unless
// one is scheduled by then.
func (e *engine) armWake() {
	if at, ok := e.pool.NextWake(); ok && at < e.wakeAt {
		e.wakeAt = at
		e.push(at, evWake, 0)
	}
}

// started handles a job a worker has just taken.
func (e *engine) started(j *workerpool.Job) {
	r := j.Data.(*request)
	e.stats.Started++
	e.stats.WaitTime += j.StartedAt() - j.ArrivedAt()
	end, _ := e.pool.End(j)
	e.schedule(r, end, evEnd)
	e.trimWaits()
}

// trimWaits takes the stale timeouts off the head of the waits but the
// last one. A stale event does nothing when its time comes, but while it is
// pending the run goes on sampling and, past the horizon, cuts off: the
// last one, which is after every other, keeps that so, and the run's
// events are the same but for those it skips.
func (e *engine) trimWaits() {
	for e.waits.len() > 1 {
		if top := e.waits.top(); e.request(top.ref).ev == top.seq {
			return
		}
		e.waits.pop()
	}
}

// inSyns is a request's ev while its pending event is in the syns, whose
// entries hold their seqs.
const inSyns = math.MaxUint64

// resend handles the earliest event of the syns, which comes before every
// other: a SYN that the full backlog drops again, told by the pool alone,
// schedules the next without its request, as connect would; any other, a
// SYN that may get in or a kernel giving up, brings its request's job up
// to date and is handled as the calendar's evSYN or evConnectFail.
func (e *engine) resend() {
	s, stage := e.syns.pop()
	n := stage + 1 // the SYNs the job sent before this event
	if n <= workerpool.SYNRetries && e.pool.Redrop(s.at) {
		e.stats.SYNDrops++
		e.stats.Redropped++
		wait, again := workerpool.SYNRetry(n + 1)
		next := s.at + wait
		// The next stage is n, whether it holds SYNs or, after the last,
		// the giving up.
		if next <= s.deadline && e.syns.fits(n, next, e.seq) {
			e.syns.push(n, synEntry{at: next, seq: e.nextSeq(), deadline: s.deadline, ref: s.ref})
		} else { // a timeout comes first
			r := e.request(s.ref)
			r.job.SetSYNs(n+1, s.at)
			k := evSYN
			if !again {
				k = evConnectFail
			}
			e.schedule(r, next, k)
		}
		e.flushStarts()
		return
	}
	r := e.request(s.ref)
	if r.ev != inSyns { // never: nothing but its own event changes a dropped request's plans
		e.flushStarts()
		return
	}
	r.ev = 0
	wait, _ := workerpool.SYNRetry(n)
	r.job.SetSYNs(n, s.at-wait)
	if n <= workerpool.SYNRetries {
		e.connect(r, s.at)
		return
	}
	e.timeout(r, s.at, workload.BackendError, statusBadGateway)
}

// schedule plans r's next event: the natural one (k at t) or, while r's
// result is not out, a timeout that comes first. On a tie the response
// wins over the proxy's read timeout, which wins over the client's.
//
// A request whose natural event is never, one waiting in the backlog for a
// worker, has a timeout only; it goes to the waits when it is not before
// the latest there, which with one timeout for all (the proxy's read
// timeout, a group's client timeout) it never is.
func (e *engine) schedule(r *request, t time.Duration, k kind) {
	waiting := t == never
	if !r.done {
		if r.read < t {
			t, k = r.read, evReadTimeout
		}
		if r.client < t {
			t, k = r.client, evClientTimeout
		}
		if r.connect < t {
			t, k = r.connect, evConnectTimeout
		}
	}
	if t == never {
		r.ev = 0
		return
	}
	if (k == evSYN || k == evConnectFail) && !e.eagerSYN {
		if i := r.job.SYNs() - 1; e.syns.fits(i, t, e.seq) {
			deadline := never
			if !r.done {
				deadline = min(r.read, r.client, r.connect)
			}
			e.syns.push(i, synEntry{at: t, seq: e.nextSeq(), deadline: deadline, ref: r.id})
			r.ev = inSyns
			return
		}
	}
	if ev := (event{at: t, seq: e.seq, ref: r.id, kind: k}); waiting && e.waits.fits(&ev) {
		r.ev = e.nextSeq()
		e.waits.push(ev)
		return
	}
	r.ev = e.push(t, k, r.id)
}

// end handles r's job leaving its worker at now.
func (e *engine) end(r *request, now time.Duration) {
	e.pool.Finish(now, &r.job)
	if !r.done {
		if r.job.State() == workerpool.Killed {
			e.finish(r, now, workload.BackendError, statusBadGateway)
		} else {
			e.finish(r, now, workload.OK, statusOK)
		}
	}
	e.release(r)
	e.flushStarts()
	e.armWake()
}

// timeout ends r at now with outcome o: the proxy or the client gave up.
// The job, if the backend has it, is abandoned; under Continue it goes on.
func (e *engine) timeout(r *request, now time.Duration, o workload.Outcome, status int) {
	e.finish(r, now, o, status)
	switch r.job.State() {
	case workerpool.Queued, workerpool.Running:
		e.pool.Abandon(now, &r.job)
		e.flushStarts()
		if r.job.State() == workerpool.Running {
			end, _ := e.pool.End(&r.job)
			e.schedule(r, end, evEnd)
		}
	case workerpool.Dropped:
		e.pool.Abandon(now, &r.job) // its connection attempt ends
	}
	e.release(r)
	e.armWake()
}

// finish ends r's request at now: its slots are released, its result goes to
// the sink and its user, if any, plans the next request.
func (e *engine) finish(r *request, now time.Duration, o workload.Outcome, status int) {
	r.done = true
	r.slots.Release()
	t := r.t
	if !t.closed {
		t.inFlight--
		e.open--
	}
	e.res = workload.Result{
		Tenant:   t.index,
		Route:    r.route,
		Outcome:  o,
		Status:   int16(status),
		Intended: r.intended,
		Latency:  now - r.intended,
		Work:     e.work(&r.job, now),
		Delayed:  r.delayed,
	}
	e.emit()
	if r.user >= 0 && !e.stopping {
		e.next(r.user, r.intended, now, o)
	}
}

// work returns the worker time of j, whose request's result is out at now
// (Result.Work): the time a worker held it when it has left its worker, or
// will hold it when it has not. A job whose client left before it ended
// holds its worker, under Continue, until its work ends; so does one still
// queued, whose turn comes. Both are counted whole, as the pool will count
// them in its busy time, although the result is recorded now. Under Cancel
// the pool frees the worker right after this, so a running job counts the
// time it ran and a queued one none.
//
// A queued job that the worker timeout may kill is the exception: the
// arbiter's tick that kills it depends on when it starts, which is not
// known yet, so its Work is the mean of the kill's window, Timeout +
// ArbiterTick/2 (or its service time if shorter), counted in
// Stats.KillGuessed.
func (e *engine) work(j *workerpool.Job, now time.Duration) time.Duration {
	switch j.State() {
	case workerpool.Done, workerpool.Killed:
		return now - j.StartedAt()
	case workerpool.Running:
		if e.cancel {
			return now - j.StartedAt()
		}
		end, _ := e.pool.End(j)
		return end - j.StartedAt()
	case workerpool.Queued:
		if e.cancel {
			return 0
		}
	default:
		return 0 // pending (rejected or delayed), refused, dropped or cancelled
	}
	if e.killable && j.Service > e.workerTO {
		e.stats.KillGuessed++
		return min(j.Service, e.workerTO+workerpool.ArbiterTick/2)
	}
	return j.Service
}

// emit hands e.res to the sink.
func (e *engine) emit() {
	e.stats.Requests++
	e.stats.Outcomes[e.res.Outcome]++
	e.sink.Add(&e.res)
}

// next plans a closed-model user's next request after one intended at
// intended ended at now with outcome o, by the loop the live driver's
// users follow too (workload.Closed).
func (e *engine) next(ui int32, intended, now time.Duration, o workload.Outcome) {
	u := &e.users[ui]
	if at, ok := u.t.loop.Next(&u.done, intended, now, o); ok {
		e.push(at, evSend, ui)
	}
}

// sample hands the backend's state and the busiest keys to the sampler.
func (e *engine) sample(now time.Duration) {
	busy, queued := e.pool.Busy()
	e.sampler.SampleBackend(now, busy, queued)
	if e.busiest <= 0 {
		return
	}
	clear(e.keyMap)
	// Policy.Busiest, the keys of Policy.KeysLimiter, into a buffer kept
	// from one sample to the next.
	e.busy = e.policy.KeysLimiter().AppendBusiest(e.busy[:0], e.busiest)
	for _, kc := range e.busy {
		e.keyMap[kc.Key] = kc.InFlight
	}
	e.sampler.SampleKeys(now, e.keyMap)
}

// cutOff ends every request still without a result at the horizon: the
// client gives up, as the live driver does when its drain runs out.
func (e *engine) cutOff(now time.Duration) {
	e.stopping = true
	e.stats.End = now
	e.syns.each(func(s *synEntry, stage int) {
		if r := e.request(s.ref); r.ev == inSyns {
			wait, _ := workerpool.SYNRetry(stage + 1)
			r.job.SetSYNs(stage+1, s.at-wait)
		}
	})
	e.syns = syns{}
	for _, chunk := range e.chunks {
		for i := range chunk {
			r := &chunk[i]
			if !r.inUse || r.done {
				continue
			}
			r.ev = 0
			e.stats.CutOff++
			e.timeout(r, now, workload.ClientTimeout, 0)
		}
	}
}
