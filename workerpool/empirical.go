package workerpool

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Empirical is a distribution given by a table of its quantiles, as
// measured from a log: "empirical:p0=1ms,p50=30ms,p90=200ms,p100=4m".
// Between two quantiles a draw is uniform (the quantile function is linear
// between the points), so p0 and p100 bound every draw. Percents rise
// strictly from 0 to 100; values never fall.
type Empirical struct {
	P []float64       // percents, P[0] = 0, last = 100
	V []time.Duration // the quantile at each percent
}

var _ Dist = Empirical{}

// Sample draws by inverting the quantile table.
func (e Empirical) Sample(r *rand.Rand) time.Duration {
	return e.Quantile(r.Float64() * 100)
}

// Quantile returns the q-th percentile (0 ≤ q ≤ 100) of the table.
func (e Empirical) Quantile(q float64) time.Duration {
	n := len(e.P)
	switch {
	case n == 0:
		return 0
	case q <= e.P[0]:
		return max(e.V[0], 0)
	case q >= e.P[n-1]:
		return max(e.V[n-1], 0)
	}
	lo, hi := 0, n-1
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if e.P[mid] <= q {
			lo = mid
		} else {
			hi = mid
		}
	}
	f := (q - e.P[lo]) / (e.P[hi] - e.P[lo])
	return max(e.V[lo]+time.Duration(f*float64(e.V[hi]-e.V[lo])), 0)
}

// Mean is the area under the quantile function.
func (e Empirical) Mean() time.Duration {
	if len(e.P) == 1 {
		return max(e.V[0], 0)
	}
	sum := 0.0
	for i := 1; i < len(e.P); i++ {
		sum += (e.P[i] - e.P[i-1]) / 100 * (float64(e.V[i-1]) + float64(e.V[i])) / 2
	}
	return fromFloat(sum)
}

func (e Empirical) String() string {
	var b strings.Builder
	b.WriteString("empirical:")
	for i := range e.P {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('p')
		b.WriteString(strconv.FormatFloat(e.P[i], 'f', -1, 64))
		b.WriteByte('=')
		b.WriteString(FormatDuration(e.V[i]))
	}
	return b.String()
}

// parseEmpirical reads the argument of "empirical:": PERCENT=DURATION
// pairs, p0 first and p100 last.
func parseEmpirical(arg string) (Empirical, error) {
	var e Empirical
	parts := strings.Split(arg, ",")
	if len(parts) > maxQuantiles {
		return e, fmt.Errorf("%d quantiles; at most %d", len(parts), maxQuantiles)
	}
	for _, kv := range parts {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok || !strings.HasPrefix(k, "p") {
			return e, fmt.Errorf("%q is not pPERCENT=DURATION", kv)
		}
		p, err := strconv.ParseFloat(k[1:], 64)
		if err != nil || !(p >= 0 && p <= 100) || strings.ContainsAny(k[1:], "eEinfINFxX_+-") {
			return e, fmt.Errorf("%q is not a percent from 0 to 100", k)
		}
		d, err := parseDur(v)
		if err != nil {
			return e, err
		}
		if n := len(e.P); n > 0 {
			if p <= e.P[n-1] {
				return e, fmt.Errorf("p%s does not come after p%s; percents must rise", k[1:], strconv.FormatFloat(e.P[n-1], 'f', -1, 64))
			}
			if d < e.V[n-1] {
				return e, fmt.Errorf("%s at p%s is below %s at p%s; quantiles never fall", FormatDuration(d), k[1:], FormatDuration(e.V[n-1]), strconv.FormatFloat(e.P[n-1], 'f', -1, 64))
			}
		}
		e.P = append(e.P, p)
		e.V = append(e.V, d)
	}
	if e.P[0] != 0 || e.P[len(e.P)-1] != 100 {
		return e, fmt.Errorf("the table must begin at p0 and end at p100 (the least and the most)")
	}
	return e, nil
}

// maxQuantiles bounds an empirical table.
const maxQuantiles = 1000
