package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"stampede/report"
	"stampede/scenarios"
)

// TestRecommendConclusive checks that inconclusive points stay out of the
// recommendation and that it depends on them exactly when one of them,
// passing, would have been chosen.
func TestRecommendConclusive(t *testing.T) {
	g := func(name string, req, ok, rej uint64, p99 float64) report.GroupResult {
		return report.GroupResult{Name: name, Tenants: 1, Counts: report.Counts{Requests: req, OK: ok, Rejected: rej}, Latency: report.Latency{Count: ok, P99: p99}}
	}
	point := func(v string, passed, inconclusive bool, okX uint64) report.Point {
		return report.Point{Value: report.Names{v}, Passed: passed, Inconclusive: inconclusive,
			SLO:    []report.SLOResult{{Name: "s", Pass: passed}},
			Groups: []report.GroupResult{g("x", 8, okX, 8-okX, 100), g("others", 100, 100, 0, 200)}}
	}
	names := report.Names{"proxy.limit_conn.per_key"}
	// Prefer the loosest passing point, so that a looser inconclusive
	// point, had it passed, would win.
	obj := scenarios.Recommend{Prefer: scenarios.PreferLoosest}
	for _, c := range []struct {
		name    string
		points  []report.Point
		want    string
		depends bool
	}{
		{"all conclusive", []report.Point{point("2", true, false, 2), point("4", true, false, 4)}, "4", false},
		{"an inconclusive point that would lose", []report.Point{point("2", false, true, 2), point("4", true, false, 4)}, "4", false},
		{"an inconclusive point that would win", []report.Point{point("4", true, false, 4), point("6", false, true, 6)}, "4", true},
		{"nothing conclusive", []report.Point{point("4", true, true, 4)}, "", true},
	} {
		cmp := report.NewComparisonFor("s", names, c.points, obj)
		depends := recommendConclusive(cmp, names, obj)
		got := ""
		if len(cmp.Recommendation.Value) > 0 {
			got = cmp.Recommendation.Value[0]
		}
		if got != c.want || depends != c.depends {
			t.Errorf("%s: recommendation %q, depends %v; want %q, %v (%s)", c.name, got, depends, c.want, c.depends, cmp.Recommendation.Reason)
		}
		for _, p := range c.points {
			if p.SLO[0].Pass != p.Passed {
				t.Errorf("%s: point %v's SLO verdict was changed", c.name, p.Value)
			}
		}
	}
}

// TestComparePointReportsOnDemand: compare writes each point's data, draws
// a point's own report only with --point-reports, and the comparison links
// whichever each point has.
func TestComparePointReportsOnDemand(t *testing.T) {
	sc := writeScenario(t, miniScenario)
	for _, c := range []struct {
		flags      []string
		report     bool
		linkSuffix string
	}{
		{nil, false, "/results.json"},
		{[]string{"--point-reports"}, true, "/report.html"},
	} {
		out := t.TempDir()
		args := append([]string{"compare", sc, "--engine", "sim", "-o", out, "--no-progress", "--sweep", "proxy.limit_conn.per_key=off,2"}, c.flags...)
		runExit(t, t.Context(), exitOK, args...)
		for _, p := range []string{"per_key=off", "per_key=2"} {
			for _, f := range []string{"results.json", "histograms.hlog", setManifest} {
				if _, err := os.Stat(filepath.Join(out, p, f)); err != nil {
					t.Errorf("%v: point %s: %v", c.flags, p, err)
				}
			}
			_, err := os.Stat(filepath.Join(out, p, "report.html"))
			if got := err == nil; got != c.report {
				t.Errorf("%v: point %s has report.html = %v, want %v", c.flags, p, got, c.report)
			}
		}
		page := readFile(t, filepath.Join(out, "report.html"))
		if want := `href="per_key=2` + c.linkSuffix + `"`; !strings.Contains(string(page), want) {
			t.Errorf("%v: the comparison report does not link %s", c.flags, want)
		}
	}
}
