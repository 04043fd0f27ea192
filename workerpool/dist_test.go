package workerpool

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseDist(t *testing.T) {
	good := []struct {
		in   string
		want Dist
		str  string // String(), when it differs from in
	}{
		{"2s", Constant{2 * time.Second}, ""},
		{" 150ms ", Constant{150 * time.Millisecond}, "150ms"},
		{"0s", Constant{0}, ""},
		{"const:2m", Constant{2 * time.Minute}, "2m"},
		{"constant:1h30m", Constant{90 * time.Minute}, "1h30m"},
		{"exp:1s", Exp{time.Second}, ""},
		{"EXP:mean=250ms", Exp{250 * time.Millisecond}, "exp:250ms"},
		{"uniform:2m..4m", Uniform{2 * time.Minute, 4 * time.Minute}, ""},
		{"uniform: 1s .. 1s", Uniform{time.Second, time.Second}, "uniform:1s..1s"},
		{"uniform:0s..2h", Uniform{0, 2 * time.Hour}, "uniform:0s..2h"},
		{"lognormal:median=30ms,p99=200ms", LogNormal{30 * time.Millisecond, 200 * time.Millisecond}, ""},
		{"lognormal:p99=1s, median=100ms", LogNormal{100 * time.Millisecond, time.Second}, "lognormal:median=100ms,p99=1s"},
		{"lognormal:p50=1s,p99=1s", LogNormal{time.Second, time.Second}, "lognormal:median=1s,p99=1s"},
		{"lognormal:Median = 10ms,P99=20ms", LogNormal{10 * time.Millisecond, 20 * time.Millisecond}, "lognormal:median=10ms,p99=20ms"},
	}
	for i, c := range good {
		got, err := ParseDist(c.in)
		if err != nil {
			t.Errorf("step %d: ParseDist(%q): %v, want %v", i, c.in, err, c.want)
			continue
		}
		if got != c.want {
			t.Errorf("step %d: ParseDist(%q) = %#v, want %#v", i, c.in, got, c.want)
		}
		wantStr := c.str
		if wantStr == "" {
			wantStr = c.in
		}
		if s := got.String(); s != wantStr {
			t.Errorf("step %d: ParseDist(%q).String() = %q, want %q", i, c.in, s, wantStr)
		}
		back, err := ParseDist(got.String())
		if err != nil || back != got {
			t.Errorf("step %d: ParseDist(%q) = %#v, %v; want %#v (round trip)", i, got.String(), back, err, got)
		}
	}

	bad := []struct {
		in, why string
	}{
		{"", `"" is not a duration`},
		{"fast", `"fast" is not a duration`},
		{"-1s", `"-1s" is negative`},
		{"2", ""}, // ParseDuration wants a unit except for 0
		{"exp:", `"" is not a duration`},
		{"exp:0s", "the mean must be above 0"},
		{"exp:-1s", "negative"},
		{"uniform:2m", "uniform needs MIN..MAX"},
		{"uniform:4m..2m", "MAX is below MIN"},
		{"uniform:1s..x", `"x" is not a duration`},
		{"uniform:2m..4m..6m", "is not a duration"},
		{"lognormal:median=30ms", "lognormal needs median and p99"},
		{"lognormal:p99=30ms", "lognormal needs median and p99"},
		{"lognormal:median=0s,p99=1s", "both above 0"},
		{"lognormal:median=30ms,p99=10ms", "p99 is below the median"},
		{"lognormal:median=30ms,p95=100ms", `unknown parameter "p95"`},
		{"lognormal:median", "is not KEY=DURATION"},
		{"lognormal:median=1s,p99=1x", `"1x" is not a duration`},
		{"normal:1s", `unknown kind "normal"`},
		{"exp:1s:2s", "is not a duration"},
		{"empirical:", "not pPERCENT=DURATION"},
		{"empirical:p50=1s,p100=2s", "must begin at p0"},
		{"empirical:p0=1s,p50=2s", "end at p100"},
		{"empirical:p0=1s,p50=500ms,p100=2s", "quantiles never fall"},
		{"empirical:p0=1s,p50=2s,p40=3s,p100=4s", "percents must rise"},
		{"empirical:p0=1s,p101=2s", "not a percent"},
		{"empirical:p0=1s,pinf=2s", "not a percent"},
		{"empirical:p0=1s,p100=x", "not a duration"},
		{"empirical:q0=1s,p100=2s", "not pPERCENT=DURATION"},
	}
	for i, c := range bad {
		d, err := ParseDist(c.in)
		if err == nil {
			t.Errorf("step %d: ParseDist(%q) = %v, want an error", i, c.in, d)
			continue
		}
		if !errors.Is(err, ErrDist) {
			t.Errorf("step %d: ParseDist(%q) error %q does not wrap ErrDist", i, c.in, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, c.why) || !strings.Contains(msg, "want e.g. 2s, exp:1s, uniform:2m..4m") {
			t.Errorf("step %d: ParseDist(%q) error %q, want it to say %q and give examples", i, c.in, msg, c.why)
		}
	}
}

// samples draws n durations from d with a fixed seed, sorted.
func samples(d Dist, n int) []time.Duration {
	r := rand.New(rand.NewPCG(1, 2))
	s := make([]time.Duration, n)
	for i := range s {
		s[i] = d.Sample(r)
	}
	slices.Sort(s)
	return s
}

func mean(s []time.Duration) float64 {
	var sum float64
	for _, v := range s {
		sum += float64(v)
	}
	return sum / float64(len(s))
}

// quantile returns the q-quantile of sorted s.
func quantile(s []time.Duration, q float64) float64 {
	return float64(s[int(q*float64(len(s)-1))])
}

func within(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

func TestDistSamples(t *testing.T) {
	const n = 100_000

	t.Run("constant", func(t *testing.T) {
		s := samples(Constant{2 * time.Second}, 100)
		if s[0] != 2*time.Second || s[len(s)-1] != 2*time.Second {
			t.Errorf("constant 2s: samples span %v..%v, want 2s..2s", s[0], s[len(s)-1])
		}
	})

	t.Run("exp", func(t *testing.T) {
		d := Exp{time.Second}
		s := samples(d, n)
		if m := mean(s); !within(m, float64(time.Second), 0.02) {
			t.Errorf("exp:1s: sample mean %v, want 1s ± 2%%", time.Duration(m))
		}
		// The median of an exponential is mean·ln 2.
		if q := quantile(s, 0.5); !within(q, float64(time.Second)*math.Ln2, 0.03) {
			t.Errorf("exp:1s: sample median %v, want %v ± 3%%", time.Duration(q), 693147180*time.Nanosecond)
		}
		if s[0] < 0 {
			t.Errorf("exp:1s: smallest sample %v, want ≥ 0", s[0])
		}
		if d.Mean() != time.Second {
			t.Errorf("exp:1s: Mean() = %v, want 1s", d.Mean())
		}
	})

	t.Run("uniform", func(t *testing.T) {
		d := Uniform{2 * time.Minute, 4 * time.Minute}
		s := samples(d, n)
		if s[0] < d.Min || s[len(s)-1] > d.Max {
			t.Errorf("uniform:2m..4m: samples span %v..%v, want within 2m..4m", s[0], s[len(s)-1])
		}
		// The extremes are reached to within 0.1% of the span.
		if s[0] > d.Min+120*time.Millisecond || s[len(s)-1] < d.Max-120*time.Millisecond {
			t.Errorf("uniform:2m..4m: samples span %v..%v, want close to both ends", s[0], s[len(s)-1])
		}
		if m := mean(s); !within(m, float64(3*time.Minute), 0.01) {
			t.Errorf("uniform:2m..4m: sample mean %v, want 3m ± 1%%", time.Duration(m))
		}
		if d.Mean() != 3*time.Minute {
			t.Errorf("uniform:2m..4m: Mean() = %v, want 3m", d.Mean())
		}
	})

	t.Run("uniform degenerate and huge", func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		if got := (Uniform{time.Second, time.Second}).Sample(r); got != time.Second {
			t.Errorf("uniform:1s..1s: Sample = %v, want 1s", got)
		}
		huge := Uniform{0, time.Duration(math.MaxInt64)}
		for i := range 1000 {
			if got := huge.Sample(r); got < 0 {
				t.Fatalf("draw %d: uniform:0..max: Sample = %v, want ≥ 0", i, got)
			}
		}
	})

	t.Run("lognormal", func(t *testing.T) {
		d := LogNormal{30 * time.Millisecond, 200 * time.Millisecond}
		s := samples(d, n)
		if q := quantile(s, 0.5); !within(q, float64(30*time.Millisecond), 0.03) {
			t.Errorf("lognormal: sample median %v, want 30ms ± 3%%", time.Duration(q))
		}
		if q := quantile(s, 0.99); !within(q, float64(200*time.Millisecond), 0.04) {
			t.Errorf("lognormal: sample p99 %v, want 200ms ± 4%%", time.Duration(q))
		}
		if m := mean(s); !within(m, float64(d.Mean()), 0.03) {
			t.Errorf("lognormal: sample mean %v, want Mean() = %v ± 3%%", time.Duration(m), d.Mean())
		}
		// σ = ln(200/30)/z99 ≈ 0.8155, so the mean is 30ms·e^(σ²/2) ≈ 41.83ms.
		if got, want := d.Mean(), 41830*time.Microsecond; !within(float64(got), float64(want), 0.001) {
			t.Errorf("lognormal: Mean() = %v, want %v", got, want)
		}
	})

	t.Run("lognormal extreme", func(t *testing.T) {
		d := LogNormal{time.Nanosecond, time.Duration(math.MaxInt64)}
		r := rand.New(rand.NewPCG(1, 2))
		for i := range 1000 {
			if got := d.Sample(r); got < 0 || got > maxSample {
				t.Fatalf("draw %d: Sample = %v, want within 0..%v", i, got, maxSample)
			}
		}
		if got := d.Mean(); got != maxSample {
			t.Errorf("Mean() = %v, want the cap %v", got, maxSample)
		}
	})
}

func FuzzParseDist(f *testing.F) {
	for _, s := range []string{
		"2s", "exp:1s", "exp:mean=1s", "uniform:2m..4m", "lognormal:median=30ms,p99=200ms",
		"const:0s", "uniform:..", "lognormal:", "lognormal:median=1ns,p99=2562047h47m16.854775807s",
		"uniform:0s..2562047h47m16.854775807s", "exp:2562047h",
		"empirical:p0=1ms,p50=30ms,p90=200ms,p99.9=2s,p100=4m", "empirical:p0=0s,p100=0s", "empirical:p0=1s,p100",
	} {
		f.Add(s)
	}
	r := rand.New(rand.NewPCG(3, 4))
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDist(s)
		if err != nil {
			if !errors.Is(err, ErrDist) {
				t.Fatalf("ParseDist(%q): error %q does not wrap ErrDist", s, err)
			}
			return
		}
		back, err := ParseDist(d.String())
		if err != nil {
			t.Fatalf("ParseDist(%q) = %#v, whose String %q does not parse: %v", s, d, d.String(), err)
		}
		if !reflect.DeepEqual(back, d) {
			t.Fatalf("ParseDist(%q) = %#v; String %q parses to %#v", s, d, d.String(), back)
		}
		if m := d.Mean(); m < 0 {
			t.Fatalf("ParseDist(%q).Mean() = %v, want ≥ 0", s, m)
		}
		for range 10 {
			if v := d.Sample(r); v < 0 {
				t.Fatalf("ParseDist(%q).Sample() = %v, want ≥ 0", s, v)
			}
		}
	})
}

func BenchmarkDistSample(b *testing.B) {
	for _, d := range []Dist{Constant{time.Second}, Exp{time.Second}, Uniform{time.Minute, 2 * time.Minute}, LogNormal{30 * time.Millisecond, 200 * time.Millisecond}} {
		b.Run(d.String(), func(b *testing.B) {
			b.ReportAllocs()
			r := rand.New(rand.NewPCG(1, 2))
			var sink time.Duration
			for b.Loop() {
				sink += d.Sample(r)
			}
			_ = sink
		})
	}
}
