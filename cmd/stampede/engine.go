package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"stampede/live"
	"stampede/loadgen"
	"stampede/report"
	"stampede/scenarios"
	"stampede/sim"
)

// playOptions say how to play one scenario.
type playOptions struct {
	engine      string // live or sim
	target      string // live only: drive this URL instead of the built-in pair
	statsURL    string // live only, with target: the backend's stats endpoint
	allowRemote bool
	transport   string // live only, built-in pair: memory or tcp
	progress    string // bar, plain or quiet
	progressOut io.Writer
	title       string // the progress bar's label
	commandLine string
}

// play runs sc on the chosen engine with a progress display and returns its
// results. An interrupted run returns its partial results, marked, with a
// nil error.
func play(ctx context.Context, sc *scenarios.Scenario, o playOptions) (*report.Results, error) {
	title := o.title
	if title == "" {
		title = sc.Name
	}
	rec := report.NewRecorder(sc)
	t := &tally{next: rec, rejectLabel: rejectLabel(live.RejectStatuses(sc.Proxy.Limits))}
	var (
		info report.RunInfo
		err  error
	)
	if o.engine == "sim" {
		view := showProgress(o.progressOut, o.progress, title, sc.Duration, t, nil)
		info, err = sim.Run(ctx, sc, t, sim.Options{Sampler: rec, Version: version(), CommandLine: o.commandLine})
		view.Stop()
	} else {
		defer tuneLiveGC()()
		counters := new(loadgen.Counters)
		view := showProgress(o.progressOut, o.progress, title, sc.Duration, t, func() time.Duration { return counters.Snapshot().Elapsed })
		info, err = live.Run(ctx, sc, t, live.Options{
			Target:          o.target,
			BackendStatsURL: o.statsURL,
			AllowRemote:     o.allowRemote,
			Counters:        counters,
			Transport:       o.transport,
			Sampler:         rec,
			Calibrated: func(c live.Calibration) {
				if o.progressOut != nil {
					fmt.Fprintln(o.progressOut, c)
				}
			},
			Version:     version(),
			CommandLine: o.commandLine,
		})
		view.Stop()
	}
	if err != nil {
		var te *live.TargetError
		if errors.As(err, &te) {
			err = asUsage(err)
		}
		return nil, err
	}
	res := rec.Results(info)
	live.Explain(res, sc)
	return res, nil
}
