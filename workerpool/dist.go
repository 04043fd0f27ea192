package workerpool

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// A Dist is a service-time distribution. Sample must be safe to call with
// different *rand.Rand from different goroutines; a Dist holds no state.
type Dist interface {
	// Sample draws one service time. The result is never negative.
	Sample(r *rand.Rand) time.Duration
	// Mean is the distribution's expected value.
	Mean() time.Duration
	// String returns the distribution in the syntax ParseDist reads.
	String() string
}

// Constant always takes D.
type Constant struct{ D time.Duration }

// Exp is exponential with the given mean.
type Exp struct{ Avg time.Duration }

// Uniform is uniform on [Min, Max].
type Uniform struct{ Min, Max time.Duration }

// LogNormal is log-normal, given by its median and 99th percentile, which is
// how people know their latencies.
type LogNormal struct{ Median, P99 time.Duration }

var (
	_ Dist = Constant{}
	_ Dist = Exp{}
	_ Dist = Uniform{}
	_ Dist = LogNormal{}
)

// z99 is the standard normal's 99th percentile.
const z99 = 2.3263478740408408

func (c Constant) Sample(*rand.Rand) time.Duration { return max(c.D, 0) }
func (c Constant) Mean() time.Duration             { return max(c.D, 0) }
func (c Constant) String() string                  { return FormatDuration(c.D) }

func (e Exp) Sample(r *rand.Rand) time.Duration {
	return fromFloat(r.ExpFloat64() * float64(e.Avg))
}
func (e Exp) Mean() time.Duration { return max(e.Avg, 0) }
func (e Exp) String() string      { return "exp:" + FormatDuration(e.Avg) }

func (u Uniform) Sample(r *rand.Rand) time.Duration {
	lo := max(u.Min, 0)
	if u.Max <= lo {
		return lo
	}
	// Uint64N: the span plus one overflows int64 for uniform:0..maxDuration.
	return lo + time.Duration(r.Uint64N(uint64(u.Max-lo)+1))
}
func (u Uniform) Mean() time.Duration {
	lo := max(u.Min, 0)
	if u.Max <= lo {
		return lo
	}
	return lo + (u.Max-lo)/2
}
func (u Uniform) String() string {
	return "uniform:" + FormatDuration(u.Min) + ".." + FormatDuration(u.Max)
}

// sigma is the spread of the underlying normal. A P99 at or below the
// median (which ParseDist rejects) degenerates to a constant.
func (l LogNormal) sigma() float64 {
	if l.Median <= 0 || l.P99 <= l.Median {
		return 0
	}
	return math.Log(float64(l.P99)/float64(l.Median)) / z99
}

func (l LogNormal) Sample(r *rand.Rand) time.Duration {
	return fromFloat(float64(l.Median) * math.Exp(l.sigma()*r.NormFloat64()))
}

// Prepare returns a Dist that draws exactly what d draws from the same
// random source, and has d's Mean and String, with whatever d works out on
// every draw worked out once: a LogNormal's spread costs a logarithm per
// Sample otherwise. Other distributions come back as they are. Use it where
// one Dist draws many times, as the simulator does.
func Prepare(d Dist) Dist {
	if l, ok := d.(LogNormal); ok {
		return &preparedLogNormal{LogNormal: l, median: float64(l.Median), sigma: l.sigma()}
	}
	return d
}

// preparedLogNormal is a LogNormal with its spread computed.
type preparedLogNormal struct {
	LogNormal
	median, sigma float64
}

func (l *preparedLogNormal) Sample(r *rand.Rand) time.Duration {
	return fromFloat(l.median * math.Exp(l.sigma*r.NormFloat64()))
}
func (l LogNormal) Mean() time.Duration {
	s := l.sigma()
	return fromFloat(float64(l.Median) * math.Exp(s*s/2))
}

// maxSample caps every draw, so that a wild distribution still gives a
// duration a timer and a sum of many can hold (about 146 years).
const maxSample = time.Duration(math.MaxInt64 / 2)

// fromFloat converts nanoseconds to a Duration in [0, maxSample]; a float
// conversion out of int64's range is undefined in Go and wraps on amd64.
func fromFloat(v float64) time.Duration {
	switch {
	case !(v > 0): // also NaN
		return 0
	case v >= float64(maxSample):
		return maxSample
	}
	return time.Duration(v)
}
func (l LogNormal) String() string {
	return "lognormal:median=" + FormatDuration(l.Median) + ",p99=" + FormatDuration(l.P99)
}

// FormatDuration writes d the short way time.ParseDuration reads back: 2m
// rather than 2m0s, 1h rather than 1h0m0s.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// ErrDist is wrapped by every error ParseDist returns.
var ErrDist = errors.New("bad service-time distribution")

const distExamples = `want e.g. 2s, exp:1s, uniform:2m..4m, lognormal:median=30ms,p99=200ms or empirical:p0=1ms,p50=30ms,p100=4m`

// ParseDist reads a service-time distribution: a constant duration ("2s"),
// "exp:MEAN", "uniform:MIN..MAX", "lognormal:median=D,p99=D" or a quantile
// table, "empirical:p0=D,p50=D,...,p100=D" (see Empirical).
func ParseDist(s string) (Dist, error) {
	bad := func(why string) error {
		return fmt.Errorf("%w %q: %s (%s)", ErrDist, s, why, distExamples)
	}
	kind, arg, found := strings.Cut(strings.TrimSpace(s), ":")
	if !found {
		d, err := parseDur(kind)
		if err != nil {
			return nil, bad(err.Error())
		}
		return Constant{d}, nil
	}
	switch strings.ToLower(kind) {
	case "const", "constant":
		d, err := parseDur(arg)
		if err != nil {
			return nil, bad(err.Error())
		}
		return Constant{d}, nil
	case "exp":
		arg = strings.TrimPrefix(arg, "mean=")
		d, err := parseDur(arg)
		if err != nil {
			return nil, bad(err.Error())
		}
		if d == 0 {
			return nil, bad("the mean must be above 0")
		}
		return Exp{d}, nil
	case "uniform":
		lo, hi, ok := strings.Cut(arg, "..")
		if !ok {
			return nil, bad("uniform needs MIN..MAX")
		}
		a, err := parseDur(lo)
		if err != nil {
			return nil, bad(err.Error())
		}
		b, err := parseDur(hi)
		if err != nil {
			return nil, bad(err.Error())
		}
		if b < a {
			return nil, bad("MAX is below MIN")
		}
		return Uniform{a, b}, nil
	case "lognormal":
		var l LogNormal
		for _, kv := range strings.Split(arg, ",") {
			k, v, ok := strings.Cut(kv, "=")
			k = strings.ToLower(strings.TrimSpace(k))
			if !ok {
				return nil, bad(fmt.Sprintf("%q is not KEY=DURATION", kv))
			}
			d, err := parseDur(v)
			if err != nil {
				return nil, bad(err.Error())
			}
			switch k {
			case "median", "p50":
				l.Median = d
			case "p99":
				l.P99 = d
			default:
				return nil, bad(fmt.Sprintf("unknown parameter %q (want median and p99)", k))
			}
		}
		if l.Median <= 0 || l.P99 <= 0 {
			return nil, bad("lognormal needs median and p99, both above 0")
		}
		if l.P99 < l.Median {
			return nil, bad("p99 is below the median")
		}
		return l, nil
	case "empirical":
		e, err := parseEmpirical(arg)
		if err != nil {
			return nil, bad(err.Error())
		}
		return e, nil
	}
	return nil, bad(fmt.Sprintf("unknown kind %q", kind))
}

func parseDur(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return d, nil
}
