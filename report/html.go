package report

// This file writes a run's report.html: one self-contained page (CSS, images
// and the charting script inline, nothing fetched) from an embedded
// html/template, and the views its templates see.

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
	"ms":    FormatLatency,
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
	if err := writeCharts(dir, charts); err != nil {
		return err
	}
	var b bytes.Buffer
	if err := writeReport(&b, r, charts); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, "report.html"), b.Bytes())
}

// writeCharts creates dir if needed and writes one PNG per chart in it
// (dir/NAME.png).
func writeCharts(dir string, charts []Chart) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: creating report directory: %w", err)
	}
	for _, ch := range charts {
		if err := writeFile(filepath.Join(dir, ch.Name+".png"), ch.PNG); err != nil {
			return err
		}
	}
	return nil
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
	return FormatLatency(s.Value)
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

// fmtSeconds formats a duration in seconds as every duration of the
// report and the summary is written (formatSeconds), "—" for none.
func fmtSeconds(s float64) string {
	if s <= 0 || math.IsNaN(s) {
		return "—"
	}
	return formatSeconds(s)
}
