package report

// This file writes report.html: one self-contained page (CSS and images
// inline, no scripts, nothing fetched) from an embedded html/template.

import (
	"bytes"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"count": fmtCount,
	"ms":    fmtLatency,
	"pct":   fmtPct,
	"secs":  fmtSeconds,
}).ParseFS(templateFS, "templates/*.tmpl"))

// maxTenantRows caps the per-tenant table; the rest are counted in a note.
const maxTenantRows = 100

// RenderReport writes dir/report.html and one PNG per chart (dir/NAME.png)
// for the run r, creating dir if needed.
func RenderReport(dir string, r *Results) error {
	if r == nil {
		return errors.New("report: rendering nil results")
	}
	charts, err := runCharts(r, formatPNG)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: creating report directory: %w", err)
	}
	for _, ch := range charts {
		if err := writeFile(filepath.Join(dir, ch.Name+".png"), ch.PNG); err != nil {
			return err
		}
	}
	var b bytes.Buffer
	if err := writeReport(&b, r, charts); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, "report.html"), b.Bytes())
}

// WriteReport writes the HTML report of r to w, drawing its charts.
func WriteReport(w io.Writer, r *Results) error {
	if r == nil {
		return errors.New("report: rendering nil results")
	}
	charts, err := runCharts(r, formatPNG)
	if err != nil {
		return err
	}
	return writeReport(w, r, charts)
}

// writeFile writes data to path through a temporary file renamed into
// place, so that a reader, or a run interrupted mid-write, never sees half a
// report.
func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	return nil
}

// writeReport executes the run template over r and its drawn charts.
func writeReport(w io.Writer, r *Results, charts []Chart) error {
	v := newRunView(r, charts)
	if err := templates.ExecuteTemplate(w, "run.html.tmpl", v); err != nil {
		return fmt.Errorf("report: writing the HTML report: %w", err)
	}
	return nil
}

// ---- views: what the templates see ----

// verdictView is the page's first line.
type verdictView struct {
	Class string // "pass", "fail" or "none"
	Text  string
}

// chartView is one inline image, or the interactive charts drawn in its
// place with the image kept for pages without scripts.
type chartView struct {
	Name, Title   string
	Caption       string
	Src           template.URL // a data: URI
	Width, Height int
	Live          []string // ids of the interactive charts that show it
}

// liveView is what the page needs to draw its interactive charts.
type liveView struct {
	Data template.JS  // the charts' JSON
	JS   template.JS  // uPlot and assets/charts.js
	CSS  template.CSS // uPlot's
}

// newLiveView returns the view of charts, or nil when there are none.
func newLiveView(charts []iChart) (*liveView, error) {
	if len(charts) == 0 {
		return nil, nil
	}
	data, err := interactiveJSON(charts)
	if err != nil {
		return nil, err
	}
	return &liveView{Data: data, JS: template.JS(uplotJS + "\n" + chartsJS), CSS: template.CSS(uplotCSS)}, nil
}

// countsRow is a table row of counts and latency.
type countsRow struct {
	Name, Group, Host string
	Tenants           int
	Counts
	Latency Latency
}

// OKShare is the share of requests that were ok, 0..1; 0 with no requests.
func (c countsRow) OKShare() float64 { return share(c.OK, c.Requests) }

// RejectedShare is the share of requests that were rejected, 0..1.
func (c countsRow) RejectedShare() float64 { return share(c.Rejected, c.Requests) }

// errorShare is the share of requests that did not end ok.
func (c countsRow) errorShare() float64 { return share(c.Requests-min(c.OK, c.Requests), c.Requests) }

// sloView is one SLO line.
type sloView struct {
	Name, Value string
	Pass        bool
}

// kv is one setting.
type kv struct{ Key, Value string }

// runView is the run template's data.
type runView struct {
	Scenario    string
	Validity    *Validity // shown as a banner before everything when not conclusive
	Verdict     verdictView
	Summary     string
	SLOs        []sloView
	Interrupted bool
	Charts      []chartView
	Groups      []countsRow
	Tenants     []countsRow
	TenantsLeft int
	TenantCount int
	Routes      []countsRow
	Backend     BackendResult
	Measured    bool // the backend's figures were measured
	Info        []kv
	Settings    []kv
	Live        *liveView
}

func newRunView(r *Results, charts []Chart) runView {
	v := runView{
		Measured:    BackendMeasured(r),
		Scenario:    r.Scenario,
		Verdict:     verdict(r.SLO),
		Summary:     summaryLine(r),
		Interrupted: r.Interrupted,
		Backend:     r.Backend,
		TenantCount: len(r.Tenants),
	}
	if val := r.Validity; val != nil && !val.Conclusive {
		// The SLO verdicts of an inconclusive run decide nothing: not red.
		v.Validity = val
		v.Verdict = verdictView{"none", "Inconclusive. " + v.Verdict.Text}
	}
	if v.Scenario == "" {
		v.Scenario = "unnamed scenario"
	}
	for _, s := range r.SLO {
		v.SLOs = append(v.SLOs, sloView{Name: s.Name, Value: sloValue(s), Pass: s.Pass})
	}
	live := runInteractive(r)
	v.Charts = chartViews(charts, live)
	v.Live, _ = newLiveView(live) // encoding floats and strings does not fail
	for _, g := range r.Groups {
		v.Groups = append(v.Groups, countsRow{Name: g.Name, Tenants: g.Tenants, Counts: g.Counts, Latency: g.Latency})
	}
	tenants := make([]countsRow, 0, len(r.Tenants))
	for _, t := range r.Tenants {
		tenants = append(tenants, countsRow{Name: t.Name, Group: t.Group, Host: t.Host, Counts: t.Counts, Latency: t.Latency})
	}
	slices.SortStableFunc(tenants, worstFirst)
	if len(tenants) > maxTenantRows {
		v.TenantsLeft = len(tenants) - maxTenantRows
		tenants = tenants[:maxTenantRows]
	}
	v.Tenants = tenants
	for _, rt := range r.Routes {
		v.Routes = append(v.Routes, countsRow{Name: rt.Name, Counts: rt.Counts, Latency: rt.Latency})
	}
	engine := r.Engine
	if engine == "" {
		engine = "unknown"
	}
	v.Info = []kv{
		{"Scenario", v.Scenario},
		{"Engine", engine},
		{"Time scale", timeScale(r)},
		{"Model duration", fmtSeconds(r.ModelDurationS)},
		{"Wall duration", fmtSeconds(r.WallDurationS)},
		{"Seed", strconv.FormatUint(r.Seed, 10)},
		{"Command line", orDash(r.CommandLine)},
		{"Version", orDash(r.Version)},
		{"Schema", orDash(r.Schema)},
	}
	if r.Shards > 0 {
		v.Info = append(v.Info, kv{"Shards", fmt.Sprintf("merged from %d results files", r.Shards)})
	}
	if l := r.SendLateness; l != nil {
		v.Info = append(v.Info,
			kv{"Tare", fmt.Sprintf("%.3f ms of wall time taken off every latency", r.TareMS)},
			kv{"Send lateness", fmt.Sprintf("p50 %.3f ms, p99 %.3f ms, max %.3f ms of wall time; %d of %d sends early", l.P50, l.P99, l.Max, l.Early, l.Sends)})
	}
	for k, val := range r.Settings {
		v.Settings = append(v.Settings, kv{k, val})
	}
	slices.SortFunc(v.Settings, func(a, b kv) int { return strings.Compare(a.Key, b.Key) })
	return v
}

// worstFirst orders tenants by the share of their requests that did not end
// ok, then by p99, both descending, then by name.
func worstFirst(a, b countsRow) int {
	if ea, eb := a.errorShare(), b.errorShare(); ea != eb {
		if ea > eb {
			return -1
		}
		return 1
	}
	if a.Latency.P99 != b.Latency.P99 {
		if a.Latency.P99 > b.Latency.P99 {
			return -1
		}
		return 1
	}
	return strings.Compare(a.Name, b.Name)
}

// chartViews returns the views of charts; a chart named N is shown by the
// interactive charts whose id is N or N-1, N-2, ….
func chartViews(charts []Chart, live []iChart) []chartView {
	out := make([]chartView, 0, len(charts))
	for _, ch := range charts {
		if len(ch.PNG) == 0 {
			continue
		}
		src := "data:image/png;base64," + base64.StdEncoding.EncodeToString(ch.PNG)
		v := chartView{Name: ch.Name, Title: ch.Title, Caption: ch.Caption, Src: template.URL(src), Width: ch.Width, Height: ch.Height}
		for _, l := range live {
			if n, ok := strings.CutPrefix(l.ID, ch.Name+"-"); l.ID == ch.Name || ok && n != "" && strings.Trim(n, "0123456789") == "" {
				v.Live = append(v.Live, l.ID)
			}
		}
		out = append(out, v)
	}
	return out
}

// verdict says in words whether the SLOs passed, naming the failures with
// their values.
func verdict(slos []SLOResult) verdictView {
	if len(slos) == 0 {
		return verdictView{"none", "No SLOs were set for this scenario."}
	}
	var failed []string
	for _, s := range slos {
		if !s.Pass {
			what := "was " + sloValue(s)
			if s.Reason != "" {
				what = s.Reason
			}
			failed = append(failed, fmt.Sprintf("%s (%s)", strings.Replace(s.Name, ": ", " ", 1), what))
		}
	}
	if len(failed) == 0 {
		if len(slos) == 1 {
			return verdictView{"pass", "The SLO passed."}
		}
		return verdictView{"pass", fmt.Sprintf("All %d SLOs passed.", len(slos))}
	}
	noun := "SLOs"
	if len(slos) == 1 {
		noun = "SLO"
	}
	return verdictView{"fail", fmt.Sprintf("%d of %d %s failed: %s.", len(failed), len(slos), noun, strings.Join(failed, "; "))}
}

// sloValue formats an SLO's measured value in the unit of its metric: a
// duration for latency metrics, a percentage for rates.
func sloValue(s SLOResult) string {
	if s.Reason != "" {
		return "— (" + s.Reason + ")"
	}
	metric := s.Metric
	if metric == "" {
		metric = s.Name // written before SLOResult carried the metric
	}
	if i := strings.LastIndex(metric, ": "); i >= 0 {
		metric = metric[i+2:]
	}
	if f := strings.Fields(metric); len(f) > 0 {
		metric = f[0]
	}
	if strings.HasSuffix(metric, "_rate") {
		return fmtPct(s.Value)
	}
	return fmtLatency(s.Value)
}

// summaryLine is the sentence under the verdict: what happened, in figures.
func summaryLine(r *Results) string {
	t := r.Totals
	if t.Requests == 0 {
		return "No requests were recorded."
	}
	parts := []string{fmt.Sprintf("%s requests in %s of model time: %s ok", fmtCount(t.Requests), fmtSeconds(r.ModelDurationS), fmtPct(share(t.OK, t.Requests)))}
	add := func(n uint64, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", fmtPct(share(n, t.Requests)), what))
		}
	}
	add(t.Rejected, "rejected")
	add(t.BackendErrors, "502")
	add(t.GatewayTimeouts, "504")
	add(t.ClientTimeouts, "client timeouts")
	add(t.Dropped, "dropped")
	add(t.Errors, "other errors")
	return strings.Join(parts, ", ") + "."
}

func timeScale(r *Results) string {
	if r.TimeScale <= 0 {
		return "—"
	}
	if r.TimeScale == 1 {
		return "1 (real time)"
	}
	return fmt.Sprintf("%g (%s faster than real time)", r.TimeScale, trimFloat(1/r.TimeScale, 1)+"×")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func share(n, of uint64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// fmtCount formats n with thin thousands separators: 1 234 567.
func fmtCount(n uint64) string {
	s := strconv.FormatUint(n, 10)
	if len(s) <= 4 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString("\u202f")
		}
		b.WriteRune(c)
	}
	return b.String()
}

// fmtPct formats a share 0..1 as a percentage with up to one decimal, and
// keeps tiny non-zero shares visible ("<0.1%").
func fmtPct(f float64) string {
	switch {
	case math.IsNaN(f):
		return "—"
	case f == 0:
		return "0%"
	case f > 0 && f < 0.001:
		return "<0.1%"
	case f < 1 && f > 0.999:
		return ">99.9%"
	}
	return trimFloat(100*f, 1) + "%"
}

// fmtLatency is FormatLatency: tables, summary and charts say a latency
// the same way.
func fmtLatency(ms float64) string { return FormatLatency(ms) }

// fmtSeconds formats a duration in seconds: "45 s", "10 min", "1 h 30 min".
func fmtSeconds(s float64) string {
	switch {
	case s <= 0 || math.IsNaN(s):
		return "—"
	case s < 10:
		return trimFloat(s, 2) + " s"
	case s < 120:
		return trimFloat(s, 0) + " s"
	case s < 7200:
		return trimFloat(s/60, 1) + " min"
	}
	return trimFloat(s/3600, 1) + " h"
}

// ---- the comparison report ----

// RenderComparison writes dir/report.html for the comparison c, with one
// PNG per comparison chart (dir/NAME.png). points are the points' results in
// c's order; they may be nil. Each point's own report is linked from its
// results path, relative to dir.
func RenderComparison(dir string, c *Comparison, points []*Results) error {
	return RenderComparisonWith(dir, c, points, ComparisonOptions{})
}

// ComparisonOptions say how RenderComparisonWith writes a comparison. The
// zero value is RenderComparison's.
type ComparisonOptions struct {
	// HasReport reports whether a point, named by its results path as in
	// Point.Results, has its own report.html to link; the others link their
	// results.json and say how to render them. Nil links every point's
	// report.
	HasReport func(results string) bool
}

// RenderComparisonWith is RenderComparison with options.
func RenderComparisonWith(dir string, c *Comparison, points []*Results, o ComparisonOptions) error {
	if c == nil {
		return errors.New("report: rendering a nil comparison")
	}
	charts, err := comparisonCharts(c, points, formatPNG)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: creating report directory: %w", err)
	}
	for _, ch := range charts {
		if err := writeFile(filepath.Join(dir, ch.Name+".png"), ch.PNG); err != nil {
			return err
		}
	}
	var b bytes.Buffer
	v := newComparisonView(dir, c, charts, comparisonInteractive(c, points), o.HasReport)
	if err := templates.ExecuteTemplate(&b, "comparison.html.tmpl", v); err != nil {
		return fmt.Errorf("report: writing the comparison report: %w", err)
	}
	return writeFile(filepath.Join(dir, "report.html"), b.Bytes())
}

// pointRow is one point × group row of the comparison table.
type pointRow struct {
	First  bool // the point's first row, carrying the point's cells
	Span   int  // rows of this point
	Label  string
	Passed bool
	SLOs   string // "2 of 2 pass"
	Report string // relative link to the point's report.html (or results.json); "" if none
	// ReportText is the link's text: "report", or "results.json" when the
	// point's report was not rendered.
	ReportText string
	Best       bool // the recommended point
	Group      string
	countsRow
}

// pointLink is one point's report link.
type pointLink struct{ Label, Href string }

// comparisonView is the comparison template's data.
type comparisonView struct {
	Scenario string
	Axis     string
	Verdict  verdictView
	Summary  string
	Rows     []pointRow
	Charts   []chartView
	Links    []pointLink
	Live     *liveView
	// Unrendered says some points link their results.json: their reports
	// were not rendered (compare without --point-reports).
	Unrendered bool
}

func newComparisonView(dir string, c *Comparison, charts []Chart, live []iChart, hasReport func(string) bool) comparisonView {
	v := comparisonView{Scenario: c.Scenario, Axis: strings.Join(c.Axis, " × "), Charts: chartViews(charts, live)}
	v.Live, _ = newLiveView(live) // encoding floats and strings does not fail
	if v.Scenario == "" {
		v.Scenario = "unnamed scenario"
	}
	if v.Axis == "" {
		v.Axis = "setting"
	}
	rec := c.Recommendation
	value := strings.Join(rec.Value, ", ")
	reason := strings.TrimSpace(rec.Reason)
	if reason != "" && !strings.HasSuffix(reason, ".") {
		reason += "."
	}
	switch {
	case len(c.Points) == 0:
		v.Verdict = verdictView{"none", "No points were run, so there is nothing to recommend."}
	case len(rec.Value) == 0:
		v.Verdict = verdictView{"none", strings.TrimSpace("No recommendation. " + reason)}
	case rec.Passed:
		v.Verdict = verdictView{"pass", strings.TrimSpace(fmt.Sprintf("Use %s = %s. %s", v.Axis, value, reason))}
	default:
		v.Verdict = verdictView{"fail", strings.TrimSpace(fmt.Sprintf("No setting meets every SLO; the closest is %s = %s. %s", v.Axis, value, reason))}
	}
	passing := 0
	best := recommendedIndex(c)
	for i, p := range c.Points {
		if p.Passed {
			passing++
		}
		label := strings.Join(p.Value, ", ")
		href, text := pointReport(dir, p.Results), "report"
		if href != "" && hasReport != nil && !hasReport(p.Results) {
			href, text = pointResults(dir, p.Results), "results.json"
			v.Unrendered = true
		}
		if href != "" {
			v.Links = append(v.Links, pointLink{Label: v.Axis + " = " + label, Href: href})
		}
		ok := 0
		for _, s := range p.SLO {
			if s.Pass {
				ok++
			}
		}
		slos := "no SLOs"
		if len(p.SLO) > 0 {
			slos = fmt.Sprintf("%d of %d pass", ok, len(p.SLO))
		}
		groups := p.Groups
		if len(groups) == 0 {
			groups = []GroupResult{{}}
		}
		for j, g := range groups {
			v.Rows = append(v.Rows, pointRow{
				First: j == 0, Span: len(groups), Label: label, Passed: p.Passed, SLOs: slos, Report: href, ReportText: text, Best: i == best,
				Group: g.Name, countsRow: countsRow{Name: g.Name, Tenants: g.Tenants, Counts: g.Counts, Latency: g.Latency},
			})
		}
	}
	v.Summary = fmt.Sprintf("%d settings of %s compared; %d pass every SLO.", len(c.Points), v.Axis, passing)
	if rec.Objective != "" {
		v.Summary += " Objective: " + rec.Objective + "."
	}
	return v
}

// pointReport returns the link from dir to the report.html beside a
// point's results file, or "" when the point names no results.
func pointReport(dir, results string) string {
	if results == "" {
		return ""
	}
	return relLink(dir, filepath.Join(filepath.Dir(filepath.FromSlash(results)), "report.html"))
}

// pointResults returns the link from dir to a point's results file.
func pointResults(dir, results string) string { return relLink(dir, filepath.FromSlash(results)) }

// relLink returns the link from dir to rp: rp itself when relative, else
// relative to dir when it can be.
func relLink(dir, rp string) string {
	if filepath.IsAbs(rp) {
		if rel, err := filepath.Rel(dir, rp); err == nil {
			rp = rel
		} else if abs, err := filepath.Abs(dir); err == nil {
			if rel, err := filepath.Rel(abs, rp); err == nil {
				rp = rel
			}
		}
	}
	return filepath.ToSlash(rp)
}
