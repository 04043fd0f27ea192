package sim

import (
	"math"
	"time"
)

// ErlangB returns the share of arrivals blocked when Poisson traffic of a
// erlangs (arrival rate × mean holding time) is offered to n servers
// without a queue: B(a, n) = (aⁿ/n!) / Σₖ₌₀ⁿ aᵏ/k!. It holds for any holding
// time distribution, which is why it describes limit_conn in front of a
// backend with workers to spare. It computes the stable recursion
// B(a, k) = a·B(a, k−1) / (k + a·B(a, k−1)).
func ErlangB(a float64, n int) float64 {
	b := 1.0
	for k := 1; k <= n; k++ {
		b = a * b / (float64(k) + a*b)
	}
	return b
}

// ErlangC returns the probability that an arrival waits when Poisson traffic
// of a erlangs is offered to c servers with an unbounded FIFO queue and
// exponential service: C(a, c) = c·B / (c − a·(1 − B)) with B = ErlangB(a,
// c). It returns 1 when a ≥ c (the queue grows without bound).
func ErlangC(a float64, c int) float64 {
	if a >= float64(c) {
		return 1
	}
	b := ErlangB(a, c)
	return float64(c) * b / (float64(c) - a*(1-b))
}

// ErlangCWait returns the mean time an arrival waits in the queue of an
// M/M/c system with arrival rate lambda (per second) and mean service time
// s: C(a, c) · s / (c − a) with a = lambda·s. It returns an infinite
// duration's stand-in (the largest Duration) when a ≥ c.
func ErlangCWait(lambda float64, s time.Duration, c int) time.Duration {
	a := lambda * s.Seconds()
	if a >= float64(c) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ErlangC(a, c) * float64(s) / (float64(c) - a))
}
