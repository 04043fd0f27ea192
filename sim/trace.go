package sim

// route returns the route of an open or trace tenant's arrival now due:
// the trace's (model trace), or a pick from the tenant's mix.
func (t *tenant) route() int {
	if r, ok := t.arrivals.Route(); ok {
		return r
	}
	return t.mix.Pick(t.rng)
}
