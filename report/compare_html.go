package report

// This file writes a comparison's report.html: the recommendation, a table
// of every point × group, the comparison's charts and a link to each point.

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// ComparisonOptions say how RenderComparison writes a comparison. The zero
// value links every point's report.
type ComparisonOptions struct {
	// HasReport reports whether a point, named by its results path as in
	// Point.Results, has its own report.html to link; the others link their
	// results.json and say how to render them. Nil links every point's
	// report.
	HasReport func(results string) bool
}

// RenderComparison writes dir/report.html for the comparison c, with one
// PNG per comparison chart (dir/NAME.png). points are the points' results in
// c's order; they may be nil. Each point's own report is linked from its
// results path, relative to dir.
func RenderComparison(dir string, c *Comparison, points []*Results, o ComparisonOptions) error {
	if c == nil {
		return errors.New("report: rendering a nil comparison")
	}
	charts, err := comparisonCharts(c, points, formatPNG)
	if err != nil {
		return err
	}
	if err := writeCharts(dir, charts); err != nil {
		return err
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
