package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"stampede/internal/levenshtein"
	"stampede/scenarios"
)

// This file holds the long help of run and compare, flag suggestions and
// value completion.

// exitCodesHelp is the exit status table of run and compare (DESIGN.md).
const exitCodesHelp = `Exit status:
  0    the run finished and every SLO passed (or there are none)
  1    an error: the run could not be played or its files written
  2    bad usage or a bad scenario file (the error names the file:line:col)
  3    an SLO of the scenario failed
  4    inconclusive: the live engine could not play the scenario faithfully on
       this machine (its own lateness could explain the result); the report
       says why and which time_scale it can hold
  130  interrupted (Ctrl-C): the partial results are still written, marked
       "interrupted": true`

const runLong = `run plays one scenario and writes, under -o DIR (default
stampede-out/<scenario name>), results.json, histograms.hlog (HdrHistogram
interval log), report.html (one self-contained file) and a PNG per chart, then
prints a summary.

The live engine (the default) plays real HTTP over loopback through the
built-in nginx-like proxy and gunicorn-like backend, time_scale times faster
than real time; --engine sim plays the same scenario in virtual time, in
seconds. --target drives a real stack instead (nginx in front of a stampede
backend, say); add --backend-stats to measure that backend's workers and queue.

` + exitCodesHelp

const runExample = `  # The incident, then the fix, in virtual time
  stampede run scenarios/stock-balance.yaml --engine sim --set proxy.limit_conn.per_key=off
  stampede run scenarios/stock-balance.yaml --engine sim

  # Live over loopback, results in ./out
  stampede run scenarios/login-burst.yaml -o out

  # Against real nginx in front of a stampede backend
  stampede backend --scenario scenarios/stock-balance.yaml --listen 127.0.0.1:9000 &
  stampede run scenarios/stock-balance.yaml --target http://127.0.0.1:8080 \
      --backend-stats http://127.0.0.1:9000/_stampede/stats`

const compareExample = `  # Which limit_conn per key? off is no limit.
  stampede compare scenarios/stock-balance.yaml --engine sim \
      --sweep proxy.limit_conn.per_key=off,2,4,6,8

  # A grid of two axes
  stampede compare scenarios/login-burst.yaml --engine sim \
      --sweep proxy.limit_req.rate=5r/s,15r/s --sweep proxy.limit_req.burst=10,20`

// suggestFlag adds "did you mean --x?" to an unknown flag error of c.
func suggestFlag(c *cobra.Command, err error) error {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return err
	}
	var known []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			known = append(known, f.Name)
		}
	})
	best, bestD := "", 3
	for _, k := range known {
		d := levenshtein.Distance(name, k)
		if strings.HasPrefix(k, name) {
			d = min(d, 1) // a flag cut short
		}
		if d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return err
	}
	return errors.New(msg + fmt.Sprintf(" (did you mean --%s?)", best))
}

// completeEngine completes --engine.
func completeEngine(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return []string{"live\treal HTTP over loopback", "sim\tvirtual time"}, cobra.ShellCompDirectiveNoFileComp
}

// completePaths completes --set and --sweep with the paths of the scenario
// named by the first argument, each followed by "=".
func completePaths(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	paths, err := scenarios.SetPaths(args[0])
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var out []string
	for _, p := range paths {
		if strings.HasPrefix(p, toComplete) {
			out = append(out, p+"=")
		}
	}
	return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
}

// registerCompletion adds value completion for the flags c has of
// --engine, --set and --sweep.
func registerCompletion(c *cobra.Command) {
	for name, fn := range map[string]cobra.CompletionFunc{"engine": completeEngine, "set": completePaths, "sweep": completePaths} {
		if c.Flags().Lookup(name) != nil {
			_ = c.RegisterFlagCompletionFunc(name, fn) // fails only for an unknown flag or twice
		}
	}
}
