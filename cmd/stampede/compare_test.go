package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
		if code, stdout, stderr := runCLI(t, context.Background(), args...); code != exitOK {
			t.Fatalf("%v: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", c.flags, code, stdout, stderr)
		}
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
		page, err := os.ReadFile(filepath.Join(out, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		if want := `href="per_key=2` + c.linkSuffix + `"`; !strings.Contains(string(page), want) {
			t.Errorf("%v: the comparison report does not link %s", c.flags, want)
		}
	}
}
