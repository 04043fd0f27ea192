package workload

import (
	"math"
	"testing"
	"time"

	"stampede/scenarios"
)

// allArrivals returns every arrival, failing past limit.
func allArrivals(t testing.TB, a *Arrivals, limit int) []time.Duration {
	t.Helper()
	var out []time.Duration
	for {
		at, ok := a.Next()
		if !ok {
			return out
		}
		if len(out) > 0 && at < out[len(out)-1] {
			t.Fatalf("arrival %d at %v is before arrival %d at %v", len(out), at, len(out)-1, out[len(out)-1])
		}
		out = append(out, at)
		if len(out) > limit {
			t.Fatalf("more than %d arrivals", limit)
		}
	}
}

func TestArrivalsCounts(t *testing.T) {
	hour := time.Hour
	for i, tc := range []struct {
		name    string
		load    scenarios.Load
		horizon time.Duration
		want    float64 // expected count
		tol     float64 // relative
	}{
		{"poisson 50/s", scenarios.Load{Rate: 50}, hour, 50 * 3600, 0.01},
		{"poisson 0.2/s", scenarios.Load{Rate: 0.2}, 100 * hour, 0.2 * 360000, 0.02},
		{"poisson start stop", scenarios.Load{Rate: 20, Start: 10 * time.Minute, Stop: 40 * time.Minute}, hour, 20 * 1800, 0.02},
		{"stop past horizon", scenarios.Load{Rate: 20, Stop: 2 * hour}, hour, 20 * 3600, 0.02},
		{"stop without horizon", scenarios.Load{Rate: 20, Stop: hour}, 0, 20 * 3600, 0.02},
		{"poisson stages", scenarios.Load{Stages: []scenarios.Stage{{Duration: 20 * time.Minute, Rate: 10}, {Duration: 20 * time.Minute, Rate: 0}, {Duration: 20 * time.Minute, Rate: 40}}}, 2 * hour, 50 * 1200, 0.02},
		{"constant 50/s", scenarios.Load{Arrivals: scenarios.Constant, Rate: 50}, hour, 50 * 3600, 0.0001},
		{"constant stages", scenarios.Load{Arrivals: scenarios.Constant, Stages: []scenarios.Stage{{Duration: time.Minute, Rate: 3}, {Duration: time.Minute, Rate: 7}}}, hour, 600, 0.002},
	} {
		a := NewArrivals(&tc.load, tc.horizon, TenantRand(42, i))
		got := float64(len(allArrivals(t, a, int(tc.want*2)+10)))
		if math.Abs(got-tc.want) > tc.tol*tc.want {
			t.Errorf("%s: got %v arrivals, want %v ± %.1f%%", tc.name, got, tc.want, tc.tol*100)
		}
	}
}

func TestArrivalsStagesRespected(t *testing.T) {
	for _, kind := range []scenarios.Arrivals{scenarios.Poisson, scenarios.Constant} {
		load := scenarios.Load{
			Arrivals: kind,
			Start:    time.Minute,
			Stages: []scenarios.Stage{
				{Duration: 10 * time.Minute, Rate: 5},
				{Duration: 10 * time.Minute, Rate: 0},
				{Duration: 10 * time.Minute, Rate: 50},
			},
		}
		got := allArrivals(t, NewArrivals(&load, 2*time.Hour, TenantRand(7, 0)), 100000)
		var per [4]int
		for _, at := range got {
			switch {
			case at < time.Minute:
				t.Fatalf("kind %d: arrival at %v, before start", kind, at)
			case at < 11*time.Minute:
				per[0]++
			case at < 21*time.Minute:
				per[1]++
			case at < 31*time.Minute:
				per[2]++
			default:
				per[3]++
			}
		}
		want := [4]float64{5 * 600, 0, 50 * 600, 0}
		for i := range per {
			if math.Abs(float64(per[i])-want[i]) > 0.05*want[i]+1 {
				t.Errorf("kind %d: stage %d: got %d arrivals, want %v ± 5%%", kind, i, per[i], want[i])
			}
		}
	}
}

func TestArrivalsConstantSpacing(t *testing.T) {
	for _, rate := range []float64{1, 3, 10, 0.2, 1000} {
		load := scenarios.Load{Arrivals: scenarios.Constant, Rate: rate, Start: 5 * time.Second}
		got := allArrivals(t, NewArrivals(&load, 5*time.Second+time.Duration(200/rate*float64(time.Second)), TenantRand(1, 3)), 1000)
		gap := time.Duration(math.Round(float64(time.Second) / rate))
		if len(got) != 200 {
			t.Errorf("rate %v: got %d arrivals, want 200", rate, len(got))
		}
		if got[0] < 5*time.Second || got[0] >= 5*time.Second+gap {
			t.Errorf("rate %v: first arrival at %v, want in [5s, 5s+%v)", rate, got[0], gap)
		}
		for i := 1; i < len(got); i++ {
			if d := got[i] - got[i-1]; d != gap {
				t.Fatalf("rate %v: step %d: gap %v, want %v", rate, i, d, gap)
			}
		}
	}
}

func TestArrivalsConstantAcrossStages(t *testing.T) {
	// 1/s for 2.5 s then 2/s: the half gap owed at the boundary is spent
	// at the new spacing.
	load := scenarios.Load{Arrivals: scenarios.Constant, Stages: []scenarios.Stage{
		{Duration: 2500 * time.Millisecond, Rate: 1},
		{Duration: 10 * time.Second, Rate: 2},
	}}
	got := allArrivals(t, NewArrivals(&load, time.Hour, TenantRand(1, 0)), 100)
	phase := got[0]
	for i, want := range []time.Duration{phase, phase + time.Second, phase + 2*time.Second} {
		if want >= 2500*time.Millisecond {
			break
		}
		if got[i] != want {
			t.Errorf("step %d: got %v, want %v", i, got[i], want)
		}
	}
	// The spacing after the boundary is 500 ms.
	n := len(got)
	if d := got[n-1] - got[n-2]; d != 500*time.Millisecond {
		t.Errorf("last gap %v, want 500ms", d)
	}
	if n < 21 || n > 23 {
		t.Errorf("got %d arrivals, want 22 ± 1", n)
	}
}

func TestArrivalsEdges(t *testing.T) {
	for i, tc := range []struct {
		name    string
		load    scenarios.Load
		horizon time.Duration
	}{
		{"zero rate", scenarios.Load{Rate: 0}, time.Hour},
		{"start after stop", scenarios.Load{Rate: 10, Start: time.Hour}, time.Minute},
		{"no horizon", scenarios.Load{Rate: 10}, 0},
		{"only zero stages", scenarios.Load{Stages: []scenarios.Stage{{Duration: time.Minute, Rate: 0}}}, time.Hour},
	} {
		if got := allArrivals(t, NewArrivals(&tc.load, tc.horizon, TenantRand(1, i)), 10); len(got) != 0 {
			t.Errorf("%s: got %d arrivals, want none", tc.name, len(got))
		}
	}
	var zero Arrivals
	if _, ok := zero.Next(); ok {
		t.Errorf("zero Arrivals: Next() = true, want false")
	}
}

func TestArrivalsDeterministic(t *testing.T) {
	load := scenarios.Load{Rate: 30, Stages: []scenarios.Stage{{Duration: time.Minute, Rate: 30}, {Duration: time.Minute, Rate: 90}}}
	a := allArrivals(t, NewArrivals(&load, time.Hour, TenantRand(9, 4)), 100000)
	b := allArrivals(t, NewArrivals(&load, time.Hour, TenantRand(9, 4)), 100000)
	c := allArrivals(t, NewArrivals(&load, time.Hour, TenantRand(9, 5)), 100000)
	if len(a) != len(b) {
		t.Fatalf("same seed: %d and %d arrivals", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed: arrival %d at %v and %v", i, a[i], b[i])
		}
	}
	if len(a) == len(c) && a[0] == c[0] {
		t.Errorf("tenants 4 and 5 drew the same arrivals")
	}
}

func TestArrivalsPoissonGaps(t *testing.T) {
	// Exponential gaps: the coefficient of variation is 1.
	load := scenarios.Load{Rate: 100}
	got := allArrivals(t, NewArrivals(&load, 1000*time.Second, TenantRand(3, 0)), 200000)
	var sum, sq float64
	for i := 1; i < len(got); i++ {
		g := (got[i] - got[i-1]).Seconds()
		sum += g
		sq += g * g
	}
	n := float64(len(got) - 1)
	mean := sum / n
	cv := math.Sqrt(sq/n-mean*mean) / mean
	if math.Abs(mean-0.01) > 0.0002 || math.Abs(cv-1) > 0.02 {
		t.Errorf("gaps: mean %v s, cv %v; want 0.01 s, 1", mean, cv)
	}
}

func TestMix(t *testing.T) {
	m := NewMix([]scenarios.WeightedRoute{{Route: 2, Weight: 1}, {Route: 0, Weight: 3}, {Route: 1, Weight: 0}})
	rng := TenantRand(5, 0)
	var n [3]int
	const draws = 200000
	for range draws {
		n[m.Pick(rng)]++
	}
	if n[1] != 0 {
		t.Errorf("route 1 of weight 0 picked %d times", n[1])
	}
	if got := float64(n[0]) / draws; math.Abs(got-0.75) > 0.005 {
		t.Errorf("route 0: share %v, want 0.75", got)
	}
	var zero Mix
	if got := zero.Pick(rng); got != 0 {
		t.Errorf("zero Mix picked %d, want 0", got)
	}
	if got := NewMix([]scenarios.WeightedRoute{{Route: 3, Weight: 1}}).Pick(nil); got != 3 {
		t.Errorf("one-route mix picked %d, want 3", got)
	}
	many := make([]scenarios.WeightedRoute, 40)
	for i := range many {
		many[i] = scenarios.WeightedRoute{Route: i, Weight: float64(i % 2)}
	}
	mm := NewMix(many)
	for range 1000 {
		if r := mm.Pick(rng); r%2 != 1 {
			t.Fatalf("40-route mix picked %d of weight 0", r)
		}
	}
}

func BenchmarkArrivalsPoisson(b *testing.B) {
	b.ReportAllocs()
	load := scenarios.Load{Stages: []scenarios.Stage{{Duration: time.Second, Rate: 1000}, {Duration: time.Second, Rate: 3000}}}
	a := NewArrivals(&load, 0, TenantRand(1, 0))
	rng := TenantRand(1, 0)
	b.ResetTimer()
	for b.Loop() {
		if _, ok := a.Next(); !ok {
			a.Reset(&load, 0, rng)
		}
	}
}

func BenchmarkArrivalsConstant(b *testing.B) {
	b.ReportAllocs()
	load := scenarios.Load{Arrivals: scenarios.Constant, Rate: 1000}
	a := NewArrivals(&load, time.Hour, TenantRand(1, 0))
	rng := TenantRand(1, 0)
	for b.Loop() {
		if _, ok := a.Next(); !ok {
			a.Reset(&load, time.Hour, rng)
		}
	}
}

func BenchmarkMixPick(b *testing.B) {
	b.ReportAllocs()
	m := NewMix([]scenarios.WeightedRoute{{Route: 0, Weight: 5}, {Route: 1, Weight: 1}, {Route: 2, Weight: 1}})
	rng := TenantRand(1, 0)
	for b.Loop() {
		m.Pick(rng)
	}
}
