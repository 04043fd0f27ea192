package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"stampede/report"
	"stampede/scenarios"
)

// scenarioSets are the --set overrides of a command that reads a scenario.
type scenarioSets []string

// register adds --set to c; example, when not empty, is shown in its help.
func (s *scenarioSets) register(c *cobra.Command, example string) {
	usage := "override a scenario field, PATH=VALUE (repeatable)"
	if example != "" {
		usage += ", e.g. " + example
	}
	c.Flags().StringArrayVar((*[]string)(s), "set", nil, usage)
}

// load reads the scenario file at path with the overrides; a bad file or a
// bad override is bad usage.
func (s scenarioSets) load(path string) (*scenarios.Scenario, error) {
	sc, err := scenarios.LoadWith(path, s)
	if err != nil {
		return nil, asUsage(err)
	}
	return sc, nil
}

// runFlags are the flags run and compare share.
type runFlags struct {
	out         string
	engine      string
	sets        scenarioSets
	target      string
	allowRemote bool
	noProgress  bool
	transport   string
	// backendStats is run's --backend-stats.
	backendStats string
}

func (f *runFlags) register(c *cobra.Command) {
	c.Flags().StringVarP(&f.out, "out", "o", "", "output directory (default stampede-out/<scenario name>)")
	c.Flags().StringVar(&f.engine, "engine", "live", "live (real HTTP on loopback) or sim (virtual time)")
	f.sets.register(c, "proxy.limit_conn.per_key=off")
	c.Flags().BoolVar(&f.noProgress, "no-progress", false, "print plain progress lines instead of bars")
	c.Flags().StringVar(&f.transport, "transport", "memory", "live, built-in proxy and backend: memory (in-process connections) or tcp (loopback); --target is always tcp")
}

// runScenario returns the RunE of a command of one scenario file: it checks
// the flags, loads the file with the --set overrides, and calls do with
// the file's name and the scenario.
func (f *runFlags) runScenario(do func(c *cobra.Command, file string, sc *scenarios.Scenario) error) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		if err := f.check(); err != nil {
			return err
		}
		sc, err := f.sets.load(args[0])
		if err != nil {
			return err
		}
		return do(c, args[0], sc)
	}
}

func (f *runFlags) check() error {
	switch f.engine {
	case "live", "sim":
	default:
		return usagef("--engine %q: want live or sim", f.engine)
	}
	switch f.transport {
	case "memory", "tcp":
	default:
		return usagef("--transport %q: want memory or tcp", f.transport)
	}
	if f.target != "" && f.engine == "sim" {
		return usagef("--target drives real HTTP: it needs --engine live")
	}
	if f.backendStats != "" && f.target == "" {
		return usagef("--backend-stats polls the backend behind a --target: give --target too")
	}
	return nil
}

func (f *runFlags) progressMode(c *cobra.Command) string {
	if f.noProgress || !isTerminal(c.OutOrStdout()) || !isTerminal(c.ErrOrStderr()) {
		return "plain"
	}
	return "bar"
}

func newRunCmd() *cobra.Command {
	var f runFlags
	var sf shardFlags
	c := &cobra.Command{
		Use:     "run SCENARIO",
		Short:   "Play a scenario and write results.json, histograms.hlog and report.html",
		Long:    runLong,
		Example: runExample,
		Args:    cobra.ExactArgs(1),
		RunE: f.runScenario(func(c *cobra.Command, _ string, sc *scenarios.Scenario) error {
			sc, sh, runID, err := runShard(c.ErrOrStderr(), &f, &sf, sc)
			if err != nil {
				return err
			}
			dir := f.out
			if dir == "" {
				dir = sh.defaultDir(filepath.Join("stampede-out", sc.Name))
			}
			if err := sh.waitStart(c.Context(), c.ErrOrStderr(), time.Now); err != nil {
				return err
			}
			res, err := play(c.Context(), sc, playOptions{
				engine:      f.engine,
				target:      f.target,
				statsURL:    f.backendStats,
				allowRemote: f.allowRemote,
				transport:   f.transport,
				progress:    f.progressMode(c),
				progressOut: c.ErrOrStderr(),
				commandLine: commandLine(),
			})
			if res == nil {
				return err
			}
			sh.stamp(res, runID)
			if werr := writeShown(c.OutOrStdout(), dir, res); werr != nil {
				return werr
			}
			if err != nil {
				return err
			}
			return sh.verdict(res)
		}),
	}
	f.register(c)
	c.Flags().StringVar(&f.target, "target", "", "drive this `URL` (e.g. nginx in front of a stampede backend) instead of the built-in proxy and backend")
	c.Flags().StringVar(&f.backendStats, "backend-stats", "", "with --target: poll the stats `URL` of the stampede backend behind it (e.g. http://127.0.0.1:9000/_stampede/stats) to measure its workers and queue")
	registerCompletion(c)
	c.Flags().BoolVar(&f.allowRemote, "allow-remote", false, "allow a --target outside loopback")
	sf.register(c, true)
	return c
}

// writeRun writes a run's results.json, histograms.hlog and report into dir.
// They are written as one set (writeSet): a kill leaves the old set or
// the new one.
func writeRun(dir string, res *report.Results) error { return writeRunSet(dir, res, true) }

// writeFile writes path through a temporary file, so an interrupted write
// never leaves half a file behind.
func writeFile(path string, write func(*os.File) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// verdict maps a finished run to its exit status: interrupted 130; an
// inconclusive run 4, unless an SLO failed by more than the generator's
// delay could explain (3); a failed SLO 3.
func verdict(res *report.Results) error {
	if res.Interrupted {
		return exitCodeError{exitInterrupted, "interrupted: partial results written"}
	}
	if v := res.Validity; v != nil && !v.Conclusive {
		if len(v.Unexplained) > 0 {
			return exitCodeError{exitSLO, fmt.Sprintf("%d SLO(s) failed by more than the generator's own delay could explain: %s", len(v.Unexplained), strings.Join(v.Unexplained, "; "))}
		}
		return exitCodeError{exitInconclusive, fmt.Sprintf("inconclusive: the generator's own delays could explain the SLO verdicts; this machine can hold time_scale %g", v.SuggestedTimeScale)}
	}
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
}

// commandLine is how this process was invoked, for the report.
func commandLine() string {
	args := make([]string, len(os.Args))
	for i, a := range os.Args {
		if strings.ContainsAny(a, " \t'\"$") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		args[i] = a
	}
	if len(args) > 0 {
		args[0] = filepath.Base(args[0])
	}
	return strings.Join(args, " ")
}
