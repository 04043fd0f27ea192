package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"stampede/report"
)

func init() { commands = append(commands, newReportCmd) }

func newReportCmd() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "report RESULTS.json... -o DIR",
		Short: "Re-render a report from saved results, or merge the shards of one run into one",
		Long: `report reads one or more results.json files. One is rendered again; several must be
shards of one run (the same scenario and settings, played on several machines) and
are merged exactly: their HdrHistograms are merged bucket by bucket and percentiles
and SLO verdicts computed again, never averaged.

It writes DIR/results.json, DIR/histograms.hlog and DIR/report.html and prints the
summary. Exit status: 2 for unreadable input or results that are not shards of one
run, 3 when an SLO of the (merged) results fails.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if out == "" {
				return usagef("report: -o DIR is required")
			}
			rs := make([]*report.Results, 0, len(args))
			for _, p := range args {
				r, err := report.ReadResults(p)
				if err != nil {
					return asUsage(err)
				}
				rs = append(rs, r)
			}
			res, err := report.MergeResults(rs...)
			if err != nil {
				return asUsage(err)
			}
			if err := writeRun(out, res); err != nil {
				return err
			}
			w := c.OutOrStdout()
			if err := report.WriteSummary(w, res); err != nil {
				return err
			}
			fmt.Fprintf(w, "\nwrote %s\n", filepath.Join(out, "report.html"))
			var failed []string
			for _, s := range res.SLO {
				if !s.Pass {
					failed = append(failed, s.Name)
				}
			}
			if len(failed) > 0 {
				return exitCodeError{exitSLO, fmt.Sprintf("%d SLO(s) failed: %s", len(failed), strings.Join(failed, "; "))}
			}
			return nil
		},
	}
	c.Flags().StringVarP(&out, "out", "o", "", "output directory (required)")
	return c
}
