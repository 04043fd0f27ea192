package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"stampede/report"
)

func newReportCmd() *cobra.Command {
	var (
		out        string
		force      bool
		comparison bool
	)
	c := &cobra.Command{
		Use:   "report RESULTS.json... -o DIR",
		Short: "Re-render a report from saved results, or merge the shards of one run into one",
		Long: `report reads one or more results.json files. One is rendered again; several must be
shards of one run (the same scenario and settings, played on several machines) and
are merged exactly: their HdrHistograms are merged bucket by bucket and percentiles
and SLO verdicts computed again, never averaged.

Shards of one run (run --shard I/N) must all be given, each once, all of one run;
copies of a whole run played on several machines must be of one engine and have
different seeds (--force merges them anyway).

With --comparison the arguments are the directories that the shards of one sweep
(compare --sweep ... --shard I/N) wrote; they are joined into the comparison and
recommendation one compare would have written, each point's results copied under
DIR.

It writes DIR/results.json, DIR/histograms.hlog and DIR/report.html and prints the
summary. Exit status: 2 for unreadable or invalid input or results that are not
shards of one run, 3 when an SLO of the (merged) results fails, 4 when they
are inconclusive (a shard's live engine could not play its part faithfully;
the merged results are conclusive only if every shard's are).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if out == "" {
				return usagef("report: -o DIR is required")
			}
			args, err := expandGlobs(args)
			if err != nil {
				return err
			}
			if comparison {
				return joinComparison(c, args, out)
			}
			rs := make([]*report.Results, 0, len(args))
			for _, p := range args {
				r, err := readValidResults(p)
				if err != nil {
					return err
				}
				rs = append(rs, r)
			}
			if err := report.CheckShards(rs, args, force); err != nil {
				return asUsage(err)
			}
			res, err := report.MergeResults(rs...)
			if sh := rs[0].Shard; err == nil && sh != nil && res.Shards < sh.Count {
				fmt.Fprintf(c.ErrOrStderr(), "stampede: merged %d of the %d shards of run %s (--force): the other shards' tenants are missing\n", max(res.Shards, 1), sh.Count, rs[0].RunID)
			}
			if err != nil {
				return asUsage(err)
			}
			if err := writeShown(c.OutOrStdout(), out, res); err != nil {
				return err
			}
			// As run judges: the validity verdict first, then the SLOs.
			// A shard cut short is merged as it is; its exit is not 130.
			judged := *res
			judged.Interrupted = false
			return verdict(&judged)
		},
	}
	c.Flags().StringVarP(&out, "out", "o", "", "output directory (required)")
	c.Flags().BoolVar(&force, "force", false, "merge results that are not shards of one run (other engines, the same seed), or the shards there are of a run that lacks some")
	c.Flags().BoolVar(&comparison, "comparison", false, "join the directories of the shards of one sweep (compare --shard) into one comparison")
	return c
}

// writeShown writes res into dir as writeRun does, then its summary to w
// and where its report is.
func writeShown(w io.Writer, dir string, res *report.Results) error {
	if err := writeRun(dir, res); err != nil {
		return err
	}
	if err := report.WriteSummary(w, res); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nwrote %s\n", filepath.Join(dir, "report.html"))
	return nil
}
