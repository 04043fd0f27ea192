package report

import (
	"fmt"
	"math"
	"strconv"

	"stampede/scenarios"
)

// Metrics an SLO can name. Latencies are over ok responses, in model-time
// milliseconds; rates are fractions of all requests of the group (dropped
// arrivals included: requests excludes nothing).
//
//	p50 p90 p95 p99 p999 max mean   latency of ok responses
//	ok_rate                         ok / requests
//	rejected_rate                   rejected / requests
//	error_rate                      (backend_errors + gateway_timeouts + errors) / requests
//	timeout_rate                    (client_timeouts + gateway_timeouts) / requests
//
// An objective without evidence fails: a group with no requests fails every
// SLO, rate or latency ("no requests"), and a latency SLO of a group that had
// requests but no ok response fails ("no ok responses"). A server that
// answered nothing has not met any objective, and an SLO that passes when the
// load never arrived would hide a broken scenario.

// Reasons an SLO fails without a measurement.
const (
	ReasonNoGroup    = "no such group"
	ReasonNoRequests = "no requests"
	ReasonNoOK       = "no ok responses"
	ReasonBadMetric  = "unknown metric"
	ReasonBadOp      = "unknown operator"
)

// latencyMetrics maps each latency metric to its figure of a Latency.
var latencyMetrics = map[string]func(*Latency) float64{
	"p50":  func(l *Latency) float64 { return l.P50 },
	"p90":  func(l *Latency) float64 { return l.P90 },
	"p95":  func(l *Latency) float64 { return l.P95 },
	"p99":  func(l *Latency) float64 { return l.P99 },
	"p999": func(l *Latency) float64 { return l.P999 },
	"max":  func(l *Latency) float64 { return l.Max },
	"mean": func(l *Latency) float64 { return l.Mean },
}

// IsLatencyMetric reports whether metric is measured in milliseconds.
func IsLatencyMetric(metric string) bool {
	_, ok := latencyMetrics[metric]
	return ok
}

// MetricValue returns g's value of metric (ms or a fraction). reason is not
// empty when there is no value: see the package's SLO rules.
func MetricValue(g *GroupResult, metric string) (v float64, reason string) {
	if g.Requests == 0 {
		return 0, ReasonNoRequests
	}
	if figure, ok := latencyMetrics[metric]; ok {
		if g.Latency.Count == 0 {
			return 0, ReasonNoOK
		}
		return figure(&g.Latency), ""
	}
	n := float64(g.Requests)
	switch metric {
	case "ok_rate":
		return float64(g.OK) / n, ""
	case "rejected_rate":
		return float64(g.Rejected) / n, ""
	case "error_rate":
		return float64(g.BackendErrors+g.GatewayTimeouts+g.Errors) / n, ""
	case "timeout_rate":
		return float64(g.ClientTimeouts+g.GatewayTimeouts) / n, ""
	}
	return 0, ReasonBadMetric
}

// compareOp applies op; ok is false for an unknown operator.
func compareOp(v float64, op string, t float64) (pass, ok bool) {
	switch op {
	case "<":
		return v < t, true
	case "<=":
		return v <= t, true
	case ">":
		return v > t, true
	case ">=":
		return v >= t, true
	}
	return false, false
}

// EvaluateSLOs returns the verdict of each objective against groups, in the
// order of slos.
func EvaluateSLOs(slos []scenarios.SLO, groups []GroupResult) []SLOResult {
	out := make([]SLOResult, 0, len(slos))
	for _, s := range slos {
		out = append(out, evaluateSLO(s, groups))
	}
	return out
}

func evaluateSLO(s scenarios.SLO, groups []GroupResult) SLOResult {
	text := s.Text
	if text == "" {
		text = fmt.Sprintf("%s %s %s", s.Metric, s.Op, strconv.FormatFloat(s.Threshold, 'g', -1, 64))
	}
	r := SLOResult{Name: s.Group + ": " + text, Threshold: s.Threshold, Group: s.Group, Metric: s.Metric, Op: s.Op}
	g := groupNamed(groups, s.Group)
	if g == nil {
		r.Reason = ReasonNoGroup
		return r
	}
	v, reason := MetricValue(g, s.Metric)
	if reason != "" {
		r.Reason = reason
		return r
	}
	pass, ok := compareOp(v, s.Op, s.Threshold)
	if !ok {
		r.Reason = ReasonBadOp
	}
	r.Pass = pass
	if IsLatencyMetric(s.Metric) {
		r.Value = round(v, 3)
	} else {
		r.Value = round(v, 6)
	}
	return r
}

// sloOf rebuilds the objective a verdict was made from.
func sloOf(r SLOResult) scenarios.SLO {
	text := r.Name
	if p := r.Group + ": "; len(text) >= len(p) && text[:len(p)] == p {
		text = text[len(p):]
	}
	return scenarios.SLO{Group: r.Group, Text: text, Metric: r.Metric, Op: r.Op, Threshold: r.Threshold}
}

// Miss is how far a verdict is from passing, relative to its threshold: 0
// for a pass, (value − threshold)/threshold for a failed upper bound and
// (threshold − value)/threshold for a failed lower bound (the absolute
// difference when the threshold is 0). A verdict without a value misses by
// +Inf.
func (r SLOResult) Miss() float64 {
	if r.Pass {
		return 0
	}
	if r.Reason != "" {
		return math.Inf(1)
	}
	d := r.Value - r.Threshold
	if r.Op == ">" || r.Op == ">=" {
		d = -d
	}
	d = max(d, 0)
	if r.Threshold != 0 {
		d /= math.Abs(r.Threshold)
	}
	return d
}
