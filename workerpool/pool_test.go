package workerpool

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// op is one call on a Pool in a script of steps.
type op uint8

const (
	arrive  op = iota // Arrive(at, jobs[job]) with Service = service; want = returned state
	finish            // Finish(at, jobs[job]); want = the job's state after
	abandon           // Abandon(at, jobs[job]); want = the job's state after
	wake              // Wake(at); want = jobs[job]'s state after
	retry             // Arrive(at, jobs[job]) again: a retransmitted SYN
)

func (o op) String() string { return [...]string{"Arrive", "Finish", "Abandon", "Wake", "Retry"}[o] }

// step is one call and what must hold after it. Jobs are numbered from 0 in
// the order of their first Arrive.
type step struct {
	at      time.Duration // offset from t0
	op      op
	job     int
	service time.Duration // for arrive
	want    State
	next    int // job the call handed a worker to (through OnStart), -1 for none
	busy    int
	queued  int
}

// play runs steps on a new pool and checks every step, returning the pool
// and its jobs.
func play(t *testing.T, cfg Config, steps []step) (*Pool, []*Job) {
	t.Helper()
	p := NewPool(cfg)
	var jobs []*Job
	var started []*Job
	p.OnStart = func(j *Job) { started = append(started, j) }
	index := func(j *Job) int {
		for i, x := range jobs {
			if x == j {
				return i
			}
		}
		return -1
	}
	for n, s := range steps {
		now := s.at
		var got State
		started = started[:0]
		switch s.op {
		case arrive:
			if s.job != len(jobs) {
				t.Fatalf("step %d: bad script: arrive job %d, want job %d", n, s.job, len(jobs))
			}
			j := &Job{Service: s.service}
			jobs = append(jobs, j)
			got = p.Arrive(now, j)
			if got != j.State() {
				t.Errorf("step %d: Arrive returned %v but the job's state is %v", n, got, j.State())
			}
			if got == Running || got == Queued {
				if j.ArrivedAt() != now {
					t.Errorf("step %d: job %d ArrivedAt = %v, want %v", n, s.job, j.ArrivedAt(), s.at)
				}
			}
		case retry:
			got = p.Arrive(now, jobs[s.job])
		case finish:
			p.Finish(now, jobs[s.job])
			got = jobs[s.job].State()
		case abandon:
			p.Abandon(now, jobs[s.job])
			got = jobs[s.job].State()
		case wake:
			p.Wake(now)
			got = jobs[s.job].State()
		}
		next := -1
		for _, j := range started {
			if (s.op != arrive && s.op != retry) || j != jobs[s.job] {
				next = index(j)
			}
		}
		desc := fmt.Sprintf("step %d: %v(t+%v, job %d)", n, s.op, s.at, s.job)
		if got != s.want {
			t.Errorf("%s: got state %v, want %v", desc, got, s.want)
		}
		if s.op != arrive && s.op != retry && next != s.next {
			t.Errorf("%s: got next job %d, want %d", desc, next, s.next)
		}
		if next >= 0 {
			if j := jobs[next]; j.State() != Running || j.StartedAt() != now {
				t.Errorf("%s: next job %d is %v started at t+%v, want running from t+%v", desc, next, j.State(), j.StartedAt(), s.at)
			}
		}
		if busy, queued := p.Busy(); busy != s.busy || queued != s.queued {
			t.Errorf("%s: got busy %d queued %d, want busy %d queued %d", desc, busy, queued, s.busy, s.queued)
		}
	}
	return p, jobs
}

func TestPoolFIFO(t *testing.T) {
	const m = time.Minute
	// listen(2) backlog 2: Linux's accept queue holds 3.
	p, jobs := play(t, Config{Workers: 1, Backlog: 2, Overflow: Reset}, []step{
		{at: 0, op: arrive, job: 0, service: 2 * m, want: Running, busy: 1},
		{at: 1 * time.Second, op: arrive, job: 1, service: 1 * m, want: Queued, busy: 1, queued: 1},
		{at: 2 * time.Second, op: arrive, job: 2, service: 3 * m, want: Queued, busy: 1, queued: 2},
		{at: 3 * time.Second, op: arrive, job: 3, service: 0, want: Queued, busy: 1, queued: 3},
		{at: 4 * time.Second, op: arrive, job: 4, service: m, want: Refused, busy: 1, queued: 3},
		// The head of the backlog gets the worker, in arrival order.
		{at: 2 * m, op: finish, job: 0, want: Done, next: 1, busy: 1, queued: 2},
		{at: 3 * m, op: finish, job: 1, want: Done, next: 2, busy: 1, queued: 1},
		{at: 6 * m, op: finish, job: 2, want: Done, next: 3, busy: 1, queued: 0},
		{at: 6 * m, op: finish, job: 3, want: Done, next: -1, busy: 0, queued: 0},
		// Finishing again does nothing.
		{at: 7 * m, op: finish, job: 3, want: Done, next: -1, busy: 0, queued: 0},
		{at: 7 * m, op: finish, job: 4, want: Refused, next: -1, busy: 0, queued: 0},
	})
	for i, want := range []time.Duration{0, 2 * m, 3 * m, 6 * m} {
		if got := jobs[i].StartedAt(); got != want {
			t.Errorf("job %d: Started t+%v, want t+%v", i, got, want)
		}
	}
	s := p.Stats(10 * m)
	want := Stats{Workers: 1, Threads: 1, Backlog: 2, BusyMax: 1, QueueMax: 3, Arrived: 5, Served: 4, Refused: 1, BusyTime: 6 * m}
	if s != want {
		t.Errorf("Stats = %+v, want %+v", s, want)
	}
}

// tickAfter returns the first arbiter tick of p strictly after x.
func tickAfter(p *Pool, x time.Duration) time.Duration {
	k, _ := p.KillTick(x - p.cfg.Timeout)
	return k
}

func TestPoolTimeout(t *testing.T) {
	const s = time.Second
	cfg := Config{Workers: 2, Timeout: 120 * s, Seed: 7}
	ph := NewPool(cfg).phase
	if ph <= 0 || ph >= ArbiterTick {
		t.Fatalf("phase %v: want within (0, %v)", ph, ArbiterTick)
	}
	k0 := 120*s + ph // the first tick after 120s
	p, jobs := play(t, cfg, []step{
		{at: 0, op: arrive, job: 0, service: 200 * s, want: Running, busy: 1},
		{at: 10 * s, op: arrive, job: 1, service: 60 * s, want: Running, busy: 2},
		{at: 20 * s, op: arrive, job: 2, service: 120 * s, want: Queued, busy: 2, queued: 1},
		{at: 30 * s, op: arrive, job: 3, service: 121*s + s/2, want: Queued, busy: 2, queued: 2},
		{at: 31 * s, op: arrive, job: 4, service: 120*s + ph/2, want: Queued, busy: 2, queued: 3},
		{at: 70 * s, op: finish, job: 1, want: Done, next: 2, busy: 2, queued: 2},
		// Killed on the arbiter's first tick more than the timeout after
		// it started; its replacement boots at once (Boot 0).
		{at: k0, op: finish, job: 0, want: Killed, next: 3, busy: 2, queued: 1},
		{at: 190 * s, op: finish, job: 2, want: Done, next: 4, busy: 2, queued: 0},
		{at: k0 + 121*s, op: finish, job: 3, want: Killed, next: -1, busy: 1, queued: 0},
		// Past the timeout but done before the tick: served.
		{at: 190*s + 120*s + ph/2, op: finish, job: 4, want: Done, next: -1, busy: 0, queued: 0},
	})
	ends := []struct {
		at     time.Duration
		killed bool
	}{
		{k0, true},            // 200s of work
		{70 * s, false},       // started at 10s
		{190 * s, false},      // started at 70s; work that ends at the timeout is done
		{k0 + 121*s, true},    // started at k0, 121.5s of work: killed on the tick 121s later
		{310*s + ph/2, false}, // started at 190s: ends before the tick that would kill it
	}
	for i, want := range ends {
		at, killed := p.End(jobs[i])
		if at != want.at || killed != want.killed {
			t.Errorf("job %d: End = t+%v killed %v, want t+%v killed %v", i, at, killed, want.at, want.killed)
		}
	}
	if k := tickAfter(p, 190*s+120*s); k != 310*s+ph {
		t.Errorf("tick after 310s = %v, want %v", k, 310*s+ph)
	}
	if k := tickAfter(p, 310*s+ph); k != 311*s+ph {
		t.Errorf("tick after the tick at 310s+%v = %v, want %v", ph, k, 311*s+ph)
	}
	st := p.Stats(400 * s)
	if st.Killed != 2 || st.Served != 3 {
		t.Errorf("Stats: killed %d served %d, want 2 and 3", st.Killed, st.Served)
	}

	// No timeout: the long job runs to its end.
	p = NewPool(Config{})
	j := &Job{Service: time.Hour}
	p.Arrive(0, j)
	if at, killed := p.End(j); at != time.Hour || killed {
		t.Errorf("no timeout: End = t+%v killed %v, want t+1h killed false", at, killed)
	}
	// gthread: the main loop's heartbeat keeps a worker on a long
	// request alive.
	p = NewPool(Config{Threads: 2, Timeout: time.Second})
	j = &Job{Service: time.Hour}
	p.Arrive(0, j)
	if at, killed := p.End(j); at != time.Hour || killed {
		t.Errorf("gthread: End = t+%v killed %v, want t+1h killed false", at, killed)
	}
}

func TestPoolAbandonContinue(t *testing.T) {
	const m = time.Minute
	p, jobs := play(t, Config{Workers: 1, Backlog: 5}, []step{
		{at: 0, op: arrive, job: 0, service: 2 * m, want: Running, busy: 1},
		{at: 0, op: arrive, job: 1, service: 2 * m, want: Queued, busy: 1, queued: 1},
		{at: 0, op: arrive, job: 2, service: 1 * m, want: Queued, busy: 1, queued: 2},
		// The running job's client leaves: the worker goes on working.
		{at: 30 * time.Second, op: abandon, job: 0, want: Running, next: -1, busy: 1, queued: 2},
		// A queued job's client leaves: the kernel has the request; it stays.
		{at: 40 * time.Second, op: abandon, job: 1, want: Queued, next: -1, busy: 1, queued: 2},
		// Abandoning twice counts once.
		{at: 50 * time.Second, op: abandon, job: 1, want: Queued, next: -1, busy: 1, queued: 2},
		{at: 2 * m, op: finish, job: 0, want: Done, next: 1, busy: 1, queued: 1},
		{at: 4 * m, op: finish, job: 1, want: Done, next: 2, busy: 1, queued: 0},
		{at: 5 * m, op: finish, job: 2, want: Done, next: -1, busy: 0, queued: 0},
	})
	for i, want := range []bool{true, true, false} {
		if jobs[i].Abandoned != want {
			t.Errorf("job %d: Abandoned = %v, want %v", i, jobs[i].Abandoned, want)
		}
	}
	s := p.Stats(5 * m)
	if s.Abandoned != 2 || s.Cancelled != 0 || s.Served != 3 || s.BusyTime != 5*m {
		t.Errorf("Stats: abandoned %d cancelled %d served %d busy time %v, want 2, 0, 3, 5m", s.Abandoned, s.Cancelled, s.Served, s.BusyTime)
	}
}

func TestPoolAbandonCancel(t *testing.T) {
	const m = time.Minute
	p, _ := play(t, Config{Workers: 1, Backlog: 5, OnClientAbort: Cancel}, []step{
		{at: 0, op: arrive, job: 0, service: 2 * m, want: Running, busy: 1},
		{at: 0, op: arrive, job: 1, service: 2 * m, want: Queued, busy: 1, queued: 1},
		{at: 0, op: arrive, job: 2, service: 2 * m, want: Queued, busy: 1, queued: 2},
		{at: 0, op: arrive, job: 3, service: 1 * m, want: Queued, busy: 1, queued: 3},
		// A queued job in the middle leaves the backlog.
		{at: 10 * time.Second, op: abandon, job: 2, want: Cancelled, next: -1, busy: 1, queued: 2},
		// The running job's client leaves: the worker is freed for the head.
		{at: 30 * time.Second, op: abandon, job: 0, want: Cancelled, next: 1, busy: 1, queued: 1},
		// The timer of the cancelled job fires later: nothing happens.
		{at: 2 * m, op: finish, job: 0, want: Cancelled, next: -1, busy: 1, queued: 1},
		// Abandoning after it ended does nothing.
		{at: 2 * m, op: abandon, job: 0, want: Cancelled, next: -1, busy: 1, queued: 1},
		{at: 2*m + 30*time.Second, op: finish, job: 1, want: Done, next: 3, busy: 1, queued: 0},
		// The last queued job is now the tail and leaves cleanly when abandoned
		// while running.
		{at: 3 * m, op: abandon, job: 3, want: Cancelled, next: -1, busy: 0, queued: 0},
		{at: 3 * m, op: arrive, job: 4, service: m, want: Running, busy: 1, queued: 0},
		{at: 3 * m, op: arrive, job: 5, service: m, want: Queued, busy: 1, queued: 1},
		{at: 3 * m, op: abandon, job: 5, want: Cancelled, next: -1, busy: 1, queued: 0},
		{at: 4 * m, op: finish, job: 4, want: Done, next: -1, busy: 0, queued: 0},
		// A finished job's client leaving changes nothing.
		{at: 5 * m, op: abandon, job: 4, want: Done, next: -1, busy: 0, queued: 0},
	})
	s := p.Stats(5 * m)
	want := Stats{Workers: 1, Threads: 1, Backlog: 5, BusyMax: 1, QueueMax: 3, Arrived: 6, Served: 2, Cancelled: 4, Abandoned: 4,
		// 0–30s job 0, 30s–2m30s job 1, 2m30s–3m job 3, 3m–4m job 4.
		BusyTime: 4 * m}
	if s != want {
		t.Errorf("Stats = %+v, want %+v", s, want)
	}
}

func TestPoolBusyTime(t *testing.T) {
	const s = time.Second
	p := NewPool(Config{Workers: 4})
	a, b, c := &Job{Service: 10 * s}, &Job{Service: 10 * s}, &Job{Service: 30 * s}
	steps := []struct {
		name      string
		do        func()
		at        time.Duration
		busyTime  time.Duration
		util      float64
		busy, max int
	}{
		{"arrive a", func() { p.Arrive(0, a) }, 0, 0, 0, 1, 1},
		{"arrive b", func() { p.Arrive(5*s, b) }, 5 * s, 5 * s, 0.25, 2, 2},
		{"arrive c", func() { p.Arrive(5*s, c) }, 5 * s, 5 * s, 0.25, 3, 3},
		{"finish a", func() { p.Finish(10*s, a) }, 10 * s, 20 * s, 0.5, 2, 3},
		{"finish b", func() { p.Finish(15*s, b) }, 15 * s, 30 * s, 0.5, 1, 3},
		// Time going backwards (two live goroutines racing for the lock)
		// counts as no time.
		{"stats in the past", func() {}, 12 * s, 30 * s, 30.0 / (4 * 12), 1, 3},
		{"finish c", func() { p.Finish(35*s, c) }, 35 * s, 50 * s, 50.0 / (4 * 35), 0, 3},
		{"idle", func() {}, 45 * s, 50 * s, 50.0 / (4 * 45), 0, 3},
	}
	for n, st := range steps {
		st.do()
		got := p.Stats(st.at)
		if got.BusyTime != st.busyTime {
			t.Errorf("step %d (%s): BusyTime = %v, want %v", n, st.name, got.BusyTime, st.busyTime)
		}
		if u := got.Utilization(st.at); math.Abs(u-st.util) > 1e-12 {
			t.Errorf("step %d (%s): Utilization(%v) = %v, want %v", n, st.name, st.at, u, st.util)
		}
		if got.Busy != st.busy || got.BusyMax != st.max {
			t.Errorf("step %d (%s): Busy %d BusyMax %d, want %d and %d", n, st.name, got.Busy, got.BusyMax, st.busy, st.max)
		}
	}
}

func TestStateAndPolicyStrings(t *testing.T) {
	for s, want := range map[State]string{Pending: "pending", Queued: "queued", Running: "running", Done: "done",
		Killed: "killed", Refused: "refused", Cancelled: "cancelled", Dropped: "dropped", State(42): "state(42)"} {
		if got := s.String(); got != want {
			t.Errorf("State(%d).String() = %q, want %q", uint8(s), got, want)
		}
	}
	for p, want := range map[fmt.Stringer]string{Continue: "continue", Cancel: "cancel", AbortPolicy(7): "on_client_abort(7)",
		Drop: "drop", Reset: "reset", OverflowPolicy(9): "backlog_overflow(9)"} {
		if got := p.String(); got != want {
			t.Errorf("%T(%v).String() = %q, want %q", p, p, got, want)
		}
	}
}

// BenchmarkPool measures an arrival that queues and a finish that hands the
// worker on: the simulator's hot path.
func BenchmarkPool(b *testing.B) {
	b.ReportAllocs()
	p := NewPool(Config{Workers: 8, Backlog: 64})
	jobs := make([]Job, 72)
	now := time.Duration(0)
	for i := range jobs {
		jobs[i] = Job{Service: time.Second}
		p.Arrive(now, &jobs[i])
	}
	head := 0
	for b.Loop() {
		now += time.Millisecond
		j := &jobs[head]
		p.Finish(now, j)
		*j = Job{Service: time.Second}
		p.Arrive(now, j)
		head = (head + 1) % len(jobs)
	}
}

// TestPoolSYNDrop plays Linux's default on a full backlog: the SYN is
// dropped and sent again on SYNRetry's schedule until it fits.
func TestPoolSYNDrop(t *testing.T) {
	const s = time.Second
	p, jobs := play(t, Config{Workers: 1, Backlog: -1}, []step{
		{at: 0, op: arrive, job: 0, service: 5 * s, want: Running, busy: 1},
		{at: 0, op: arrive, job: 1, service: s, want: Dropped, busy: 1},
		{at: 1 * s, op: retry, job: 1, want: Dropped, busy: 1},
		{at: 3 * s, op: retry, job: 1, want: Dropped, busy: 1},
		{at: 5 * s, op: finish, job: 0, want: Done, next: -1, busy: 0},
		{at: 7 * s, op: retry, job: 1, want: Running, busy: 1},
	})
	if n := jobs[1].SYNs(); n != 4 {
		t.Errorf("SYNs = %d, want 4 (0, 1, 3, 7 s)", n)
	}
	if st := p.Stats(7 * s); st.SYNDrops != 3 || st.Arrived != 2 {
		t.Errorf("Stats %+v: want 3 SYNs dropped, 2 arrived", st)
	}
	// The schedule: 1 s doubling, six retransmissions, ETIMEDOUT at 127 s.
	var at time.Duration
	for n := 1; ; n++ {
		wait, again := SYNRetry(n)
		at += wait
		if !again {
			if n != SYNRetries+1 || at != 127*s {
				t.Errorf("the kernel gives up after transmission %d at %v, want %d and 127s", n, at, SYNRetries+1)
			}
			break
		}
		if want := time.Duration(1<<n-1) * s; at != want {
			t.Errorf("transmission %d at %v, want %v", n+1, at, want)
		}
	}
}

// TestPoolBootAndRecycle plays a kill and a max_requests recycle: each
// worker is out for Boot, and the backlog waits for it.
func TestPoolBootAndRecycle(t *testing.T) {
	const s = time.Second
	cfg := Config{Workers: 1, Timeout: 2 * s, Boot: s, MaxRequests: 2, Seed: 3}
	kill := tickAfter(NewPool(cfg), 2*s)
	p, _ := play(t, cfg, []step{
		{at: 0, op: arrive, job: 0, service: 10 * s, want: Running, busy: 1},
		{at: 0, op: arrive, job: 1, service: s, want: Queued, busy: 1, queued: 1},
		// Killed on the tick; the replacement boots for a second.
		{at: kill, op: finish, job: 0, want: Killed, next: -1, busy: 0, queued: 1},
		{at: kill + s, op: wake, job: 1, want: Running, next: 1, busy: 1},
		{at: kill + 2*s, op: finish, job: 1, want: Done, next: -1, busy: 0},
		{at: kill + 2*s, op: arrive, job: 2, service: s, want: Running, busy: 1},
		{at: kill + 2*s, op: arrive, job: 3, service: s, want: Queued, busy: 1, queued: 1},
		// Its second request: recycled, out for a second more.
		{at: kill + 3*s, op: finish, job: 2, want: Done, next: -1, busy: 0, queued: 1},
		{at: kill + 4*s, op: wake, job: 3, want: Running, next: 3, busy: 1},
	})
	if at, ok := p.NextWake(); ok {
		t.Errorf("NextWake = %v, want none", at)
	}
	if st := p.Stats(kill + 5*s); st.Killed != 1 || st.Recycled != 1 || st.Booting != 0 {
		t.Errorf("Stats %+v: want 1 killed, 1 recycled, none booting", st)
	}
}

// TestPoolThreads plays a gthread worker: Threads requests at once.
func TestPoolThreads(t *testing.T) {
	const s = time.Second
	play(t, Config{Workers: 2, Threads: 2, Backlog: 1}, []step{
		{at: 0, op: arrive, job: 0, service: s, want: Running, busy: 1},
		{at: 0, op: arrive, job: 1, service: s, want: Running, busy: 2},
		{at: 0, op: arrive, job: 2, service: s, want: Running, busy: 3},
		{at: 0, op: arrive, job: 3, service: s, want: Running, busy: 4},
		{at: 0, op: arrive, job: 4, service: s, want: Queued, busy: 4, queued: 1},
		{at: s, op: finish, job: 0, want: Done, next: 4, busy: 4},
	})
}

// TestRedropIsArrive plays random calls on two pools alike but for the
// retransmitted SYNs of dropped jobs, which one is given with Arrive and
// the other with Redrop (then Arrive when Redrop says it may get in), and
// requires the same states, starts and counters of both after every call.
func TestRedropIsArrive(t *testing.T) {
	var redropped, resent, startedBy int
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 9))
		cfg := Config{Workers: 1 + rng.IntN(3), Backlog: []int{-1, 1, 2}[rng.IntN(3)], Boot: time.Duration(rng.IntN(3)) * time.Second,
			MaxRequests: rng.IntN(4), Seed: seed, OnClientAbort: AbortPolicy(rng.IntN(2))}
		if rng.IntN(4) == 0 {
			cfg.Overflow = Reset
		}
		p, q := NewPool(cfg), NewPool(cfg)
		var pStarts, qStarts []int
		var pj, qj []*Job
		index := map[*Job]int{}
		p.OnStart = func(j *Job) { pStarts = append(pStarts, index[j]) }
		q.OnStart = func(j *Job) { qStarts = append(qStarts, index[j]) }
		var now time.Duration
		for step := range 300 {
			now += []time.Duration{0, 0, time.Millisecond, time.Second}[rng.IntN(4)]
			// Ends and boots due by now, in order, on both; a boot that
			// ends at now is left to the call at now half the time.
			late := rng.IntN(2) == 0
			for {
				at, which := now+1, -1
				for i, j := range pj {
					if j.State() == Running {
						if end, _ := p.End(j); end < at {
							at, which = end, i
						}
					}
				}
				if w, ok := p.NextWake(); ok && w < at && (w < now || !late) {
					at, which = w, len(pj)
				}
				if which < 0 {
					break
				}
				if which == len(pj) {
					p.Wake(at)
					q.Wake(at)
				} else {
					p.Finish(at, pj[which])
					q.Finish(at, qj[which])
				}
			}
			switch op := rng.IntN(6); {
			case op < 2 || len(pj) == 0:
				a, b := &Job{Service: time.Duration(1+rng.IntN(3)) * time.Second}, &Job{}
				*b = *a
				index[a], index[b] = len(pj), len(pj)
				pj, qj = append(pj, a), append(qj, b)
				if sa, sb := p.Arrive(now, a), q.Arrive(now, b); sa != sb {
					t.Fatalf("seed %d step %d: Arrive %v and %v", seed, step, sa, sb)
				}
			case op < 5:
				// One dropped job's SYN again, or every one's: a burst.
				var retry []int
				for i := range pj {
					if pj[i].State() == Dropped {
						retry = append(retry, i)
					}
				}
				if len(retry) > 1 && op < 4 {
					retry = retry[rng.IntN(len(retry)):][:1]
				}
				for _, i := range retry {
					sa := p.Arrive(now, pj[i])
					before := len(qStarts)
					if q.Redrop(now) {
						redropped++
						if len(qStarts) > before {
							startedBy++
						}
						qj[i].SetSYNs(qj[i].SYNs()+1, now)
						if sa != Dropped {
							t.Fatalf("seed %d step %d: Redrop dropped job %d, Arrive gave %v", seed, step, i, sa)
						}
					} else if sb := q.Arrive(now, qj[i]); sb != sa || sb == Dropped {
						t.Fatalf("seed %d step %d: after Redrop, Arrive gave %v, the other pool %v", seed, step, sb, sa)
					} else {
						resent++
					}
				}
			default:
				i := rng.IntN(len(pj))
				p.Abandon(now, pj[i])
				q.Abandon(now, qj[i])
			}
			if fmt.Sprint(pStarts) != fmt.Sprint(qStarts) { // before Stats, which hands any start left over
				t.Fatalf("seed %d step %d: starts %v and %v", seed, step, pStarts, qStarts)
			}
			for i := range pj {
				if a, b := pj[i], qj[i]; a.State() != b.State() || a.SYNs() != b.SYNs() || a.StartedAt() != b.StartedAt() || a.ArrivedAt() != b.ArrivedAt() {
					t.Fatalf("seed %d step %d: job %d %v %d SYNs, started %v, and %v %d, %v", seed, step, i, a.State(), a.SYNs(), a.StartedAt(), b.State(), b.SYNs(), b.StartedAt())
				}
				if at, again := pj[i].NextSYN(); pj[i].State() == Dropped {
					if bt, bagain := qj[i].NextSYN(); at != bt || again != bagain {
						t.Fatalf("seed %d step %d: job %d's next SYN at %v %v and %v %v", seed, step, i, at, again, bt, bagain)
					}
				}
			}
			if sp, sq := p.Stats(now), q.Stats(now); sp != sq {
				t.Fatalf("seed %d step %d: stats %+v and %+v", seed, step, sp, sq)
			}
		}
	}
	if redropped == 0 || resent == 0 || startedBy == 0 {
		t.Errorf("%d SYNs dropped again by Redrop (%d starting jobs as a boot ended), %d let in: want each", redropped, startedBy, resent)
	}
	t.Logf("%d SYNs dropped again by Redrop (%d starting jobs as a boot ended), %d let in", redropped, startedBy, resent)
}
