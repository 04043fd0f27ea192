package limiterproxy

import (
	"encoding/json"
	"net/http"

	"stampede/limit"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MetricsPath and KeysPath are where Metrics.Handler answers: the Prometheus
// text exposition and the busiest keys as JSON.
const (
	MetricsPath = "/metrics"
	KeysPath    = "/debug/keys"
)

// busiestKeys is how many keys KeysPath lists.
const busiestKeys = 20

// Metrics are the proxy's Prometheus metrics, on a registry of their own.
type Metrics struct{ metrics }

// metrics is the state behind Metrics: the counters
// of every limit, resolved once so that counting is an atomic add.
type metrics struct {
	reg    *prometheus.Registry
	policy *limit.Policy
	conn   []limitMetrics // per Policy.Conn rule
	req    []limitMetrics // per Policy.Req rule
}

// limitMetrics are one limit's series. inFlight is nil for limit_req, which
// holds nothing while a request is served.
type limitMetrics struct {
	passed, rejected, rejectedDryRun, delayed prometheus.Counter
	inFlight                                  prometheus.Gauge
}

// NewMetrics returns the metrics of every limit in p on a registry of their
// own (never the global one, so several proxies can run in one process).
// Each limit has the series
//
//	stampede_limit_passed_total{limit="limit_conn[0]",key="$host"}
//	stampede_limit_rejected_total
//	stampede_limit_rejected_dry_run_total
//	stampede_limit_delayed_total   (limit_req: admitted after a delay)
//	stampede_limit_in_flight       (limit_conn: requests holding a slot)
//
// passed counts requests the limit admitted without delay; a request whose
// key is empty is not counted by that limit at all, as nginx does. A nil
// *Metrics counts nothing. Metrics are safe for concurrent use.
func NewMetrics(p *limit.Policy) *Metrics {
	m := &Metrics{metrics{reg: prometheus.NewRegistry(), policy: p}}
	labels := []string{"limit", "key"}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	passed := counter("stampede_limit_passed_total", "Requests the limit admitted without delay.")
	rejected := counter("stampede_limit_rejected_total", "Requests the limit rejected with its status.")
	dry := counter("stampede_limit_rejected_dry_run_total", "Requests the limit would have rejected, let through because it is in dry-run mode.")
	delayed := counter("stampede_limit_delayed_total", "Requests limit_req admitted after a delay.")
	inFlight := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stampede_limit_in_flight",
		Help: "Requests holding a limit_conn slot now.",
	}, labels)
	m.reg.MustRegister(passed, rejected, dry, delayed, inFlight)
	series := func(kind string, i int, key string, gauge bool) limitMetrics {
		lv := []string{limit.LimitName(kind, i), key}
		lm := limitMetrics{
			passed:         passed.WithLabelValues(lv...),
			rejected:       rejected.WithLabelValues(lv...),
			rejectedDryRun: dry.WithLabelValues(lv...),
			delayed:        delayed.WithLabelValues(lv...),
		}
		if gauge {
			lm.inFlight = inFlight.WithLabelValues(lv...)
		}
		return lm
	}
	if p != nil {
		for i, r := range p.Conn {
			m.conn = append(m.conn, series("limit_conn", i, r.Key.String(), true))
		}
		for i, r := range p.Req {
			m.req = append(m.req, series("limit_req", i, r.Key.String(), false))
		}
	}
	return m
}

// Registry returns the registry the metrics are on, to add collectors
// (such as the Go runtime's) or to gather them in tests.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves MetricsPath (Prometheus text format) and KeysPath: a JSON
// array of the busiest keys of the first limit_conn, at most 20, as
// [{"key":"site1","in_flight":4}, ...], each key as Key.Display writes it.
// Anything else is 404.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(MetricsPath, promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc(KeysPath, func(w http.ResponseWriter, r *http.Request) {
		var keys []limit.KeyCount
		if m.policy != nil {
			keys = m.policy.Busiest(busiestKeys)
			for i := range keys {
				keys[i].Key = m.policy.Conn[0].Key.Display(keys[i].Key)
			}
		}
		if keys == nil {
			keys = []limit.KeyCount{}
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(keys) //nolint:errcheck // the client may be gone; nothing to do about it
	})
	return mux
}

// The counting methods below take a nil receiver (no metrics) and an index
// the Policy produced.

func (m *Metrics) reqVerdict(i int, v limit.Verdict) {
	if m == nil || i < 0 || i >= len(m.req) {
		return
	}
	m.req[i].count(v)
}

func (m *Metrics) connVerdict(i int, v limit.Verdict) {
	if m == nil || i < 0 || i >= len(m.conn) {
		return
	}
	m.conn[i].count(v)
}

func (m *Metrics) connInFlight(i int, d float64) {
	if m == nil || i < 0 || i >= len(m.conn) {
		return
	}
	m.conn[i].inFlight.Add(d)
}

func (lm *limitMetrics) count(v limit.Verdict) {
	switch v {
	case limit.Passed:
		lm.passed.Inc()
	case limit.Delayed:
		lm.delayed.Inc()
	case limit.Rejected:
		lm.rejected.Inc()
	case limit.RejectedDryRun:
		lm.rejectedDryRun.Inc()
	}
}

// countReq counts the limit_req stage's decision: the deciding rule gets
// the verdict, every other rule that counted the request (non-empty key)
// passed it, unless the request was rejected, in which case nginx charged
// no rule and neither do the metrics.
func (m *Metrics) countReq(keys []string, d limit.ReqDecision) {
	if m == nil {
		return
	}
	for i, k := range keys {
		switch {
		case i == d.Rule:
			m.reqVerdict(i, d.Verdict)
		case k == "" || d.Verdict == limit.Rejected:
		default:
			m.reqVerdict(i, limit.Passed)
		}
	}
}

// connAdmitted counts an admitted request (delta 1) and its end (delta -1)
// for every limit_conn that counted it: the in-flight gauge of each rule
// holding a slot, and on admission passed or rejected_dry_run.
func (m *Metrics) connAdmitted(p *limit.Policy, keys []string, d limit.ConnDecision, delta float64) {
	if d.Verdict == limit.RejectedDryRun && delta > 0 {
		m.connVerdict(d.Rule, limit.RejectedDryRun)
	}
	for i, k := range keys {
		if k == "" {
			continue
		}
		if d.Verdict == limit.RejectedDryRun && p.Conn[i].Spec.DryRun {
			// The dry-run pass stopped at its rejecting rule and released
			// what it had taken: no dry-run rule holds a slot, and later
			// ones never saw the request. Enforced rules beside them do.
			continue
		}
		if delta > 0 {
			m.connVerdict(i, limit.Passed)
		}
		m.connInFlight(i, delta)
	}
}
