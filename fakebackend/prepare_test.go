package fakebackend

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestPrepare checks that a prepared Dist draws exactly what the original
// draws from the same source, and reads the same.
func TestPrepare(t *testing.T) {
	for n, d := range []Dist{
		Constant{time.Second},
		Exp{time.Second},
		Uniform{time.Minute, 2 * time.Minute},
		LogNormal{30 * time.Millisecond, 200 * time.Millisecond},
		LogNormal{time.Second, time.Second},
		LogNormal{time.Nanosecond, 1<<63 - 1},
	} {
		p := Prepare(d)
		if p.String() != d.String() || p.Mean() != d.Mean() {
			t.Errorf("step %d: Prepare(%v) reads %v, mean %v; want %v, mean %v", n, d, p, p.Mean(), d, d.Mean())
		}
		a, b := rand.New(rand.NewPCG(1, uint64(n))), rand.New(rand.NewPCG(1, uint64(n)))
		for i := range 10000 {
			if got, want := p.Sample(a), d.Sample(b); got != want {
				t.Fatalf("step %d: %v: draw %d: got %v, want %v", n, d, i, got, want)
			}
		}
	}
}

// TestPoolAtMatchesTime plays one random script through both families of
// Pool methods and checks that they agree on every state, time and counter.
func TestPoolAtMatchesTime(t *testing.T) {
	for _, cfg := range []Config{
		{Workers: 2, Backlog: 3, Timeout: 3 * time.Second},
		{Workers: 3, Backlog: 2, OnClientAbort: Cancel},
		{Workers: 1, Backlog: -1, Timeout: time.Second, OnClientAbort: Cancel},
	} {
		rng := rand.New(rand.NewPCG(7, 7))
		pt, pa := NewPool(cfg), NewPool(cfg)
		var jt, ja []*Job
		now := time.Duration(0)
		for step := range 2000 {
			now += time.Duration(rng.Int64N(int64(time.Second)))
			if rng.IntN(10) == 0 {
				now -= time.Duration(rng.Int64N(int64(time.Second))) // time going backwards
			}
			at := t0.Add(now)
			i := rng.IntN(len(jt) + 1)
			var nt, na *Job
			switch op := rng.IntN(3); {
			case i == len(jt) || op == 0:
				svc := time.Duration(rng.Int64N(int64(5 * time.Second)))
				jt, ja = append(jt, &Job{Service: svc}), append(ja, &Job{Service: svc})
				i = len(jt) - 1
				if st, sa := pt.Arrive(at, jt[i]), pa.ArriveAt(now, ja[i]); st != sa {
					t.Fatalf("%+v step %d: Arrive %v, ArriveAt %v", cfg, step, st, sa)
				}
			case op == 1:
				nt, na = pt.Finish(at, jt[i]), pa.FinishAt(now, ja[i])
			default:
				nt, na = pt.Abandon(at, jt[i]), pa.AbandonAt(now, ja[i])
			}
			if (nt == nil) != (na == nil) {
				t.Fatalf("%+v step %d: next job %v and %v", cfg, step, nt, na)
			}
			for k := range jt {
				a, b := jt[k], ja[k]
				if a.State() != b.State() || a.Abandoned != b.Abandoned {
					t.Fatalf("%+v step %d: job %d: %v/%v and %v/%v", cfg, step, k, a.State(), a.Abandoned, b.State(), b.Abandoned)
				}
				if a.State() == Running || a.State() == Done || a.State() == Killed {
					et, kt := pt.End(a)
					ea, ka := pa.EndAt(b)
					if et.Sub(t0) != ea || kt != ka || a.Started.Sub(t0) != b.StartedAt() || a.StartedAt()-a.ArrivedAt() != b.StartedAt()-b.ArrivedAt() {
						t.Fatalf("%+v step %d: job %d: End %v %v, EndAt %v %v; Started %v, StartedAt %v", cfg, step, k, et.Sub(t0), kt, ea, ka, a.Started.Sub(t0), b.StartedAt())
					}
				}
				if a.Arrived.Sub(t0) != b.ArrivedAt() {
					t.Fatalf("%+v step %d: job %d: Arrived %v, ArrivedAt %v", cfg, step, k, a.Arrived.Sub(t0), b.ArrivedAt())
				}
			}
			if st, sa := pt.Stats(at), pa.StatsAt(now); st != sa {
				t.Fatalf("%+v step %d: Stats %+v, StatsAt %+v", cfg, step, st, sa)
			}
		}
	}
}
