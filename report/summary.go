package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteSummary writes r as a plain text table, one row per group and a row
// of totals, followed by the SLO verdicts. Columns: tenants, requests, ok,
// rejected (the limiter's answer, 503 by default), 502, 504, client
// timeouts, dropped, errors, and p50, p99 and max of ok responses in model
// time.
func WriteSummary(w io.Writer, r *Results) error {
	var b strings.Builder
	writeValidity(&b, r)
	status := ""
	if r.Interrupted {
		status = ", interrupted"
	}
	fmt.Fprintf(&b, "scenario %s: engine %s, time scale %g, model %s, wall %s%s\n",
		r.Scenario, r.Engine, r.TimeScale, formatSeconds(r.ModelDurationS), formatSeconds(r.WallDurationS), status)
	if len(r.Settings) > 0 {
		var s []string
		for _, k := range sortedKeys(r.Settings) {
			s = append(s, k+"="+r.Settings[k])
		}
		fmt.Fprintf(&b, "settings: %s\n", strings.Join(s, " "))
	}
	// tabwriter aligns every column right; pad the names to align them left.
	width := len("total")
	for _, g := range r.Groups {
		width = max(width, len(g.Name))
	}
	tw := tabwriter.NewWriter(&b, 0, 8, 0, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "group"+strings.Repeat(" ", width-len("group"))+"\t  tenants\t  requests\t  ok\t  rejected\t  502\t  504\t  client timeouts\t  dropped\t  errors\t  p50\t  p99\t  max\t")
	row := func(name, tenants string, c Counts, l Latency) {
		name += strings.Repeat(" ", width-len(name))
		fmt.Fprintf(tw, "%s\t  %s\t  %d\t  %d\t  %d\t  %d\t  %d\t  %d\t  %d\t  %d\t  %s\t  %s\t  %s\t\n", name, tenants,
			c.Requests, c.OK, c.Rejected, c.BackendErrors, c.GatewayTimeouts, c.ClientTimeouts, c.Dropped, c.Errors,
			latencyCell(l, l.P50), latencyCell(l, l.P99), latencyCell(l, l.Max))
	}
	tenants := 0
	for _, g := range r.Groups {
		row(g.Name, strconv.Itoa(g.Tenants), g.Counts, g.Latency)
		tenants += g.Tenants
	}
	row("total", strconv.Itoa(tenants), r.Totals, Latency{})
	if err := tw.Flush(); err != nil {
		return err
	}
	if BackendMeasured(r) {
		fmt.Fprintf(&b, "backend: %d workers, busy max %d, queue max %d, utilization %s\n",
			r.Backend.Workers, r.Backend.BusyMax, r.Backend.QueueMax, formatPercent(r.Backend.Utilization))
	} else {
		b.WriteString("backend: not measured (a --target run without --backend-stats)\n")
	}
	writeGenerator(&b, r)
	if len(r.SLO) > 0 {
		failed := 0
		for _, s := range r.SLO {
			verdict := "pass"
			if !s.Pass {
				verdict = "FAIL"
				failed++
			}
			fmt.Fprintf(&b, "SLO %s  %s (%s)\n", verdict, s.Name, describeValue(s))
		}
		if failed == 0 {
			fmt.Fprintf(&b, "all %d SLOs passed\n", len(r.SLO))
		} else {
			fmt.Fprintf(&b, "%d of %d SLOs failed\n", failed, len(r.SLO))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func latencyCell(l Latency, v float64) string {
	if l.Count == 0 {
		return "-"
	}
	return formatMs(v)
}

// describeValue says what an SLO measured: its value, or why it has none.
func describeValue(s SLOResult) string {
	if s.Reason != "" {
		return s.Reason
	}
	return formatMetric(s.Metric, s.Value)
}

// formatMetric formats a metric's value in its unit.
func formatMetric(metric string, v float64) string {
	if IsLatencyMetric(metric) {
		return formatMs(v)
	}
	return formatPercent(v)
}

// FormatLatency formats a model-time latency in milliseconds as the
// summary, the reports and their charts all write it (formatMs), and "—"
// for none (NaN or negative).
func FormatLatency(ms float64) string {
	if math.IsNaN(ms) || ms < 0 {
		return "—"
	}
	return formatMs(ms)
}

// formatMs formats a model-time latency in milliseconds with 3 significant
// digits and a unit a person reads at a glance: 0.512 ms, 31.2 ms, 212 ms,
// 1.5 s, 3.2 min.
func formatMs(ms float64) string {
	switch {
	case ms < 1000:
		return sig3(ms) + " ms"
	case ms < 60_000:
		return sig3(ms/1000) + " s"
	default:
		return sig3(ms/60_000) + " min"
	}
}

// formatSeconds formats seconds like formatMs.
func formatSeconds(s float64) string { return formatMs(s * 1000) }

// formatPercent formats a fraction as a percentage with up to 3 decimals.
func formatPercent(f float64) string {
	return trimFloat(f*100, 3) + "%"
}

// sig3 formats v with 3 significant digits (more for v ≥ 1000), without
// an exponent.
func sig3(v float64) string {
	a := math.Abs(v)
	d := 0
	switch {
	case a == 0 || a >= 100:
		d = 0
	case a >= 10:
		d = 1
	case a >= 1:
		d = 2
	default:
		d = 3
	}
	return trimFloat(v, d)
}

// behindWarn is how far behind its schedule, in model time at the 99th
// percentile, the live generator of a run without a validity verdict (older
// results) may send before the summary warns that the machine could not
// play the scenario at its time scale.
const behindWarn = 100.0 // ms

// writeGenerator writes what the live engine says of its own measurement:
// the tare it took off, and how late it sent.
func writeGenerator(b *strings.Builder, r *Results) {
	l := r.SendLateness
	if l == nil {
		return
	}
	scale := r.TimeScale
	if scale <= 0 {
		scale = 1
	}
	fmt.Fprintf(b, "live engine: tare %.3f ms wall off every latency; sends late p50 %.3f ms, p99 %.3f ms wall (%s model)\n",
		r.TareMS, l.P50, l.P99, formatMs(l.P99/scale))
	if p99 := l.P99 / scale; p99 > behindWarn && r.Validity == nil {
		// Only results written before the validity verdict existed: the
		// verdict is the one rule, and an inconclusive run says why in
		// its banner.
		fmt.Fprintf(b, "warning: the generator sent %s of model time behind its schedule at p99; this machine could not play the scenario at time scale %g, and latencies include that delay (try a larger time_scale)\n",
			formatMs(p99), r.TimeScale)
	}
}

// writeValidity writes, first in the summary, why an inconclusive run is
// so and the time scale this machine can hold; nothing for a conclusive
// run.
func writeValidity(b *strings.Builder, r *Results) {
	v := r.Validity
	if v == nil || v.Conclusive {
		return
	}
	fmt.Fprintf(b, "INCONCLUSIVE: this machine could not play the scenario faithfully at time scale %g; the SLO verdicts below decide nothing.\n", r.TimeScale)
	for _, reason := range v.Reasons {
		fmt.Fprintf(b, "  - %s\n", reason)
	}
	if v.SuggestedTimeScale > 0 {
		fmt.Fprintf(b, "  This machine can hold time_scale %g for this scenario: run it again with --set time_scale=%g (or time_scale: auto).\n", v.SuggestedTimeScale, v.SuggestedTimeScale)
	}
	b.WriteString("\n")
}
