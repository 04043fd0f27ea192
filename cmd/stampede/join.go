package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"stampede/report"
)

// readValidResults reads a results.json and checks it (report.ValidateResults);
// either failure is bad input.
func readValidResults(path string) (*report.Results, error) {
	r, err := report.ReadResults(path)
	if err != nil {
		return nil, asUsage(err)
	}
	if err := report.ValidateResults(r); err != nil {
		return nil, usagef("reading results %s: %v", path, err)
	}
	return r, nil
}

// joinComparison joins the sweep shards' directories dirs into out: the
// points' results copied to where one compare would have written them, then
// comparison.json and its report.
func joinComparison(c *cobra.Command, dirs []string, out string) error {
	cs := make([]*report.Comparison, len(dirs))
	names := make([]string, len(dirs))
	for i, d := range dirs {
		names[i] = filepath.Join(d, "comparison.json")
		cmp, err := report.ReadComparison(names[i])
		if err != nil {
			return asUsage(err)
		}
		cs[i] = cmp
	}
	joined, err := report.JoinComparisons(cs, names)
	if err != nil {
		return asUsage(err)
	}
	src := report.PointSources(cs)
	results := make([]*report.Results, len(joined.Points))
	for i, p := range joined.Points {
		from := filepath.Join(dirs[src[i]], filepath.FromSlash(p.Results))
		if results[i], err = readValidResults(from); err != nil {
			return err
		}
		if err := copyDir(filepath.Dir(from), filepath.Join(out, filepath.Dir(filepath.FromSlash(p.Results)))); err != nil {
			return fmt.Errorf("copying point %d's results: %w", i, err)
		}
	}
	// As compare does: the recommendation leaves out the points the live
	// engine could not play faithfully.
	depends := recommendConclusive(joined, joined.Axis)
	if err := writeComparison(out, joined, results); err != nil {
		return err
	}
	w := c.OutOrStdout()
	for _, p := range joined.Points {
		fmt.Fprintf(w, "%-28s %s\n", fmt.Sprint(p.Value), pointLine(p))
	}
	fmt.Fprintf(w, "\nrecommendation: %s\n", joined.Recommendation.Reason)
	fmt.Fprintf(w, "wrote %s\n", filepath.Join(out, "report.html"))
	if depends {
		return exitCodeError{exitInconclusive, "inconclusive: the recommendation depends on points the live engine could not play faithfully (see each point's report)"}
	}
	if !joined.Recommendation.Passed {
		return exitCodeError{exitSLO, "no point passes every SLO"}
	}
	return nil
}

// copyDir copies the regular files of src (not its subdirectories) into
// dst, each through a temporary file.
func copyDir(src, dst string) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(dst, e.Name()), func(f *os.File) error { _, err := f.Write(b); return err }); err != nil {
			return err
		}
	}
	return nil
}

// expandGlobs expands the arguments that name no file but are patterns
// (shard-*/results.json), in order, for callers without a shell (a
// distroless container); a pattern that matches nothing is bad usage.
func expandGlobs(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		if _, err := os.Stat(a); err == nil || !strings.ContainsAny(a, "*?[") {
			out = append(out, a)
			continue
		}
		m, err := filepath.Glob(strings.TrimRight(a, "/")) // shard-*/ names folders
		if err != nil {
			return nil, usagef("%q: %v", a, err)
		}
		if len(m) == 0 {
			return nil, usagef("%q matches no file", a)
		}
		out = append(out, m...)
	}
	return out, nil
}
