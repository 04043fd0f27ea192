package report

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrInvalidResults is wrapped by ValidateResults: the document has the
// results schema but not what it promises.
var ErrInvalidResults = errors.New("invalid results")

// ValidateResults checks what a reader of results.json relies on and the
// JSON types cannot say, so that a corrupt or hand-edited file is refused
// with a reason rather than rendered as nonsense: the lists groups,
// tenants, routes and slo present (an empty list for none, never null);
// every set of counts adding up (the outcomes to requests, no more ok
// latencies than ok answers); every figure finite and not negative; time
// scale in (0, 1]; tenants naming groups that are listed; histograms, when
// present, one per tenant and route; a shard's index within its count.
// Negative counts do not decode at all (DecodeResults says which field).
// The error names the first problem found.
func ValidateResults(r *Results) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidResults, fmt.Sprintf(format, args...))
	}
	if r.Schema != Schema {
		return bad("schema is %q, want %q", r.Schema, Schema)
	}
	if r.Scenario == "" {
		return bad("no scenario name")
	}
	for _, l := range []struct {
		name string
		nil  bool
	}{{"groups", r.Groups == nil}, {"tenants", r.Tenants == nil}, {"routes", r.Routes == nil}, {"slo", r.SLO == nil}} {
		if l.nil {
			return bad("%q is null or missing (want a list, [] for none)", l.name)
		}
	}
	if !(r.TimeScale > 0 && r.TimeScale <= 1) {
		return bad("time_scale %g is not in (0, 1]", r.TimeScale)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"model_duration_s", r.ModelDurationS}, {"wall_duration_s", r.WallDurationS}, {"backend.utilization", r.Backend.Utilization}, {"tare_wall_ms", r.TareMS}} {
		if !finiteNonNeg(f.v) {
			return bad("%s is %g (want a figure of 0 or more)", f.name, f.v)
		}
	}
	if r.Backend.Workers < 0 || r.Backend.BusyMax < 0 || r.Backend.QueueMax < 0 {
		return bad("backend has a negative count (%+v)", r.Backend)
	}
	if err := checkCounts("totals", r.Totals, nil); err != nil {
		return bad("%v", err)
	}
	var groups []string
	for i, g := range r.Groups {
		if g.Name == "" {
			return bad("groups[%d] has no name", i)
		}
		if g.Tenants < 0 {
			return bad("group %s has %d tenants", g.Name, g.Tenants)
		}
		if err := checkCounts("group "+g.Name, g.Counts, &g.Latency); err != nil {
			return bad("%v", err)
		}
		groups = append(groups, g.Name)
	}
	for i, t := range r.Tenants {
		if t.Name == "" {
			return bad("tenants[%d] has no name", i)
		}
		if !slices.Contains(groups, t.Group) {
			return bad("tenant %s is of group %q, which groups does not list", t.Name, t.Group)
		}
		if err := checkCounts("tenant "+t.Name, t.Counts, &t.Latency); err != nil {
			return bad("%v", err)
		}
	}
	for _, rt := range r.Routes {
		if err := checkCounts("route "+rt.Name, rt.Counts, &rt.Latency); err != nil {
			return bad("%v", err)
		}
	}
	if h := r.Histograms; h != nil && (h.Tenants != nil || h.Routes != nil) {
		if len(h.Tenants) != len(r.Tenants) || len(h.Routes) != len(r.Routes) {
			return bad("histograms has %d tenants and %d routes, the results %d and %d", len(h.Tenants), len(h.Routes), len(r.Tenants), len(r.Routes))
		}
	}
	if r.Series != nil && !(r.Series.Step > 0) {
		return bad("series.step_s is %g (want above 0)", r.Series.Step)
	}
	if s := r.Shard; s != nil && (s.Count < 1 || s.Index < 0 || s.Index >= s.Count) {
		return bad("shard %s: want 0 ≤ index < count", s)
	}
	return nil
}

// checkCounts checks one set of counts and, when given, its latency.
func checkCounts(what string, c Counts, lat *Latency) error {
	sum := c.OK + c.Rejected + c.BackendErrors + c.GatewayTimeouts + c.ClientTimeouts + c.Dropped + c.Errors
	if sum != c.Requests {
		return fmt.Errorf("%s: its outcomes add up to %d, its requests are %d", what, sum, c.Requests)
	}
	if lat == nil {
		return nil
	}
	if lat.Count > c.OK {
		return fmt.Errorf("%s: %d latencies of %d ok answers", what, lat.Count, c.OK)
	}
	for _, v := range []float64{lat.Min, lat.Mean, lat.P50, lat.P90, lat.P95, lat.P99, lat.P999, lat.Max} {
		if !finiteNonNeg(v) {
			return fmt.Errorf("%s: latency %g ms (want a figure of 0 or more)", what, v)
		}
	}
	return nil
}

func finiteNonNeg(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }
