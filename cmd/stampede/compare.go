package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"stampede/report"
	"stampede/scenarios"
)

func newCompareCmd() *cobra.Command {
	var (
		f            runFlags
		sf           shardFlags
		sweeps       []string
		pointReports bool
	)
	c := &cobra.Command{
		Use:   "compare SCENARIO --sweep PATH=V1,V2,...",
		Short: "Play a scenario once per limit setting and recommend one",
		Long: `compare plays the scenario once per point of a sweep (one --sweep is an axis,
two make a grid; without --sweep the file's sweep: block is used), writes each
point's results (results.json, histograms.hlog; with --point-reports also its
own report.html and charts) under -o DIR, then comparison.json and a comparison
report.html whose recommendation is the point that passes every SLO farthest from a
point that fails one. A recommend: block in the file changes that objective:
recommend: {protect: GROUP, prefer: strictest|loosest} asks only GROUP's SLOs
to pass and takes the strictest (or loosest) such setting; off is the loosest.

` + exitCodesHelp + `
(3: no point passes every SLO).`,
		Example: compareExample,
		Args:    cobra.ExactArgs(1),
		RunE: f.runScenario(func(c *cobra.Command, file string, base *scenarios.Scenario) error {
			axes := base.Sweep
			if len(sweeps) > 0 {
				axes = nil
				for _, s := range sweeps {
					a, err := scenarios.ParseSweep(s)
					if err != nil {
						return usagef("--sweep %q: %v", s, err)
					}
					axes = append(axes, a)
				}
			}
			if len(axes) == 0 {
				return usagef("nothing to compare: give --sweep PATH=V1,V2,... or a sweep: block in %s", file)
			}
			if len(axes) > 2 {
				return usagef("%d sweep axes: compare takes one or two", len(axes))
			}
			if err := distinctAxes(axes); err != nil {
				return err
			}
			points := grid(axes)
			sh, err := sf.resolve(getenv)
			if err != nil {
				return err
			}
			sh.start = time.Time{} // each point starts when it is its turn
			mine := sh.shardPoints(len(points))
			runID := ""
			if sh.Count > 0 || sh.runID != "" {
				if runID, err = sh.runIDOf(base, sweepKey(axes)); err != nil {
					return err
				}
			}
			// Check every point loads before playing any of them.
			scs := make([]*scenarios.Scenario, len(points))
			for i, p := range points {
				if scs[i], err = scenarios.LoadWith(file, append(append([]string(nil), f.sets...), p.sets...)); err != nil {
					return asUsage(fmt.Errorf("point %s: %w", p.label, err))
				}
			}
			dir := f.out
			if dir == "" {
				dir = sh.defaultDir(filepath.Join("stampede-out", base.Name+"-compare"))
			}
			if f.engine == "live" && len(points) > 3 {
				fmt.Fprintf(c.ErrOrStderr(), "%d points played live; --engine sim plays the same sweep in virtual time in seconds\n", len(points))
			}
			var (
				cps     []report.Point
				results []*report.Results
				played  []int // the grid index of each of cps
			)
			names := make(report.Names, len(axes))
			for i, a := range axes {
				names[i] = a.Path
			}
			newComparison := func() *report.Comparison {
				cmp := report.NewComparisonFor(base.Name, names, cps, base.Recommend)
				if sh.Count > 0 {
					info := sh.ShardInfo
					cmp.RunID, cmp.Shard, cmp.PointIndex, cmp.GridPoints = runID, &info, played, len(points)
				}
				return cmp
			}
			// Each point is written beside the engine, so the next point
			// plays meanwhile; its own report is drawn only when asked for.
			pw := newPointWriter(pointReports)
			defer pw.wait()
			for _, i := range mine {
				p := points[i]
				res, err := play(c.Context(), scs[i], playOptions{
					engine:      f.engine,
					transport:   f.transport,
					progress:    f.progressMode(c),
					progressOut: c.ErrOrStderr(),
					title:       fmt.Sprintf("[%d/%d] %s", i+1, len(points), p.label),
					commandLine: commandLine(),
				})
				if res == nil {
					return fmt.Errorf("point %s: %w", p.label, err)
				}
				sh.stamp(res, runID)
				sub := filepath.Join(dir, p.dir)
				if err != nil || res.Interrupted {
					pw.write(sub, res)
					if werr := pw.wait(); werr != nil {
						return werr
					}
					// The cut-off point is written but left out of the
					// comparison: a run stopped before its overload
					// would pass its SLOs and be recommended.
					// Keep what was played: the comparison of the points so far.
					cmp := newComparison()
					if werr := writeComparison(dir, cmp, results); werr != nil {
						return werr
					}
					return exitCodeError{exitInterrupted, fmt.Sprintf("interrupted at point %s: %d of %d points compared in %s", p.label, len(cps), len(mine), dir)}
				}
				pw.write(sub, res)
				cps = append(cps, report.NewPoint(p.values, filepath.ToSlash(filepath.Join(p.dir, "results.json")), res))
				results = append(results, res)
				played = append(played, i)
			}
			if err := pw.wait(); err != nil {
				return err
			}
			cmp := newComparison()
			depends := recommendConclusive(cmp, names, base.Recommend)
			if err := writeComparison(dir, cmp, results); err != nil {
				return err
			}
			w := c.OutOrStdout()
			for k, p := range cps {
				fmt.Fprintf(w, "%-28s %s\n", points[played[k]].label, pointLine(p))
			}
			if sh.Count > 0 {
				// The verdict is the joined sweep's: a shard that fails
				// its points' SLOs has still done its part.
				fmt.Fprintf(w, "\nshard %s of run %s: %d of %d points; join every shard's directory with stampede report --comparison DIR... -o DIR\n", sh.ShardInfo, runID, len(cps), len(points))
				fmt.Fprintf(w, "wrote %s\n", filepath.Join(dir, "comparison.json"))
				return nil
			}
			fmt.Fprintf(w, "\nobjective: %s\nrecommendation: %s\n", cmp.Recommendation.Objective, cmp.Recommendation.Reason)
			fmt.Fprintf(w, "wrote %s\n", filepath.Join(dir, "report.html"))
			if !pointReports {
				fmt.Fprintf(w, "each point's results.json is under %s; compare --point-reports also draws each point's own report (or: stampede report POINT/results.json -o POINT)\n", dir)
			}
			if depends {
				return exitCodeError{exitInconclusive, "inconclusive: the recommendation depends on points the live engine could not play faithfully on this machine (each point's results.json says why and the time_scale it can hold; --point-reports draws its report)"}
			}
			if !cmp.Recommendation.Passed {
				return exitCodeError{exitSLO, "no point passes every SLO"}
			}
			return nil
		}),
	}
	f.register(c)
	c.Flags().StringArrayVar(&sweeps, "sweep", nil, "PATH=V1,V2,... to sweep (twice for a grid)")
	c.Flags().BoolVar(&pointReports, "point-reports", false, "also render each point's own report.html and charts (the comparison links each point's results.json otherwise)")
	sf.register(c, false)
	registerCompletion(c)
	return c
}

// recommendConclusive keeps the inconclusive points of cmp out of its
// recommendation, saying so in its reason, and reports whether the
// recommendation depends on them: when no point is conclusive, or when an
// inconclusive point, had it passed every SLO, would have been recommended
// instead (its true result is unknown, so it might have been).
func recommendConclusive(cmp *report.Comparison, names report.Names, obj scenarios.Recommend) bool {
	var conclusive []report.Point
	var left []string
	for _, p := range cmp.Points {
		if p.Inconclusive {
			left = append(left, strings.Join(p.Value, ","))
			continue
		}
		conclusive = append(conclusive, p)
	}
	if len(left) == 0 {
		return false
	}
	cmp.Recommendation = report.RecommendFor(names, conclusive, obj)
	cmp.Recommendation.Reason += fmt.Sprintf(" (%d inconclusive point(s) left out: %s)", len(left), strings.Join(left, "; "))
	if len(conclusive) == 0 {
		return true
	}
	for _, p := range cmp.Points {
		if !p.Inconclusive {
			continue
		}
		q := p
		q.Passed = true
		q.SLO = slices.Clone(p.SLO)
		for i := range q.SLO {
			q.SLO[i].Pass = true
		}
		alt := report.RecommendFor(names, append(append([]report.Point(nil), conclusive...), q), obj)
		if slices.Equal(alt.Value, q.Value) {
			return true
		}
	}
	return false
}

func writeComparison(dir string, cmp *report.Comparison, results []*report.Results) error {
	return writeSet(dir, func(tmp string) error {
		if err := writeFile(filepath.Join(tmp, "comparison.json"), func(f *os.File) error { return report.WriteComparison(f, cmp) }); err != nil {
			return err
		}
		return report.RenderComparison(tmp, cmp, results, report.ComparisonOptions{
			// The points are written before the comparison: link the
			// reports that are there.
			HasReport: func(res string) bool {
				_, err := os.Stat(filepath.Join(dir, filepath.Dir(filepath.FromSlash(res)), "report.html"))
				return err == nil
			},
		})
	})
}

// pointWriter writes each point's output (results.json, histograms.hlog,
// and when asked for its own report) on one goroutine beside the engine, so
// that encoding and drawing a point is off the path of the next point's
// play. It holds at most one point waiting.
type pointWriter struct {
	reports bool
	work    chan func() error
	done    chan struct{}
	err     error // the first error writing a point; read after done
}

func newPointWriter(reports bool) *pointWriter {
	w := &pointWriter{reports: reports, work: make(chan func() error, 1), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for f := range w.work {
			if err := f(); err != nil && w.err == nil {
				w.err = err
			}
		}
	}()
	return w
}

// write hands a point's results to the writer for dir; the error is
// wait's. res must not change afterwards.
func (w *pointWriter) write(dir string, res *report.Results) {
	w.work <- func() error { return writeRunSet(dir, res, w.reports) }
}

// wait waits for every point handed to write and returns the first error
// writing one. It may be called more than once; write may not follow it.
func (w *pointWriter) wait() error {
	if w.work != nil {
		close(w.work)
		w.work = nil
		<-w.done
	}
	return w.err
}

// distinctAxes refuses a path swept twice: its points would be played
// twice, one value overriding the other.
func distinctAxes(axes []scenarios.Axis) error {
	for i, a := range axes {
		for _, b := range axes[:i] {
			if a.Path == b.Path {
				return usagef("--sweep %s is given twice: give its values once, %s=V1,V2,...", a.Path, a.Path)
			}
		}
	}
	return nil
}

// sweepKey is the axes as one string, for a sweep's run id.
func sweepKey(axes []scenarios.Axis) string {
	var b strings.Builder
	for _, a := range axes {
		b.WriteString(a.Path + "=" + strings.Join(a.Values, ",") + "\n")
	}
	return b.String()
}

// pointLine is a point's one-line summary: SLO verdict and each group's ok
// share and p99.
func pointLine(p report.Point) string {
	var b strings.Builder
	switch {
	case p.Inconclusive:
		b.WriteString("INCONCLUSIVE ")
	case p.Passed:
		b.WriteString("pass ")
	default:
		b.WriteString("FAIL ")
	}
	for _, g := range p.Groups {
		ok := 0.0
		if g.Requests > 0 {
			ok = 100 * float64(g.OK) / float64(g.Requests)
		}
		p99 := "-"
		if g.Latency.Count > 0 {
			p99 = report.FormatLatency(g.Latency.P99) // as run's summary says it
		}
		fmt.Fprintf(&b, " %s: %.1f%% ok, p99 %s;", g.Name, ok, p99)
	}
	return strings.TrimSuffix(b.String(), ";")
}

// sweepPoint is one point of a sweep grid.
type sweepPoint struct {
	sets   []string     // PATH=VALUE per axis
	values report.Names // VALUE per axis
	label  string       // per_key=4, workers=16
	dir    string       // a directory name for the point
}

// grid returns every combination of the axes' values, the first axis
// varying slowest.
func grid(axes []scenarios.Axis) []sweepPoint {
	points := []sweepPoint{{}}
	for _, a := range axes {
		short := a.Path[strings.LastIndex(a.Path, ".")+1:]
		var next []sweepPoint
		for _, p := range points {
			for _, v := range a.Values {
				q := sweepPoint{
					sets:   append(append([]string(nil), p.sets...), a.Path+"="+v),
					values: append(append(report.Names(nil), p.values...), v),
				}
				lbl := short + "=" + v
				if p.label != "" {
					q.label = p.label + ", " + lbl
					q.dir = p.dir + "_" + safeName(lbl)
				} else {
					q.label, q.dir = lbl, safeName(lbl)
				}
				next = append(next, q)
			}
		}
		points = next
	}
	return points
}

// safeName keeps letters, digits and ._=- of s for a directory name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '=', r == '-':
			return r
		}
		return '_'
	}, s)
}
