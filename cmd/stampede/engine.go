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
	if o.engine == "sim" {
		return playSim(ctx, sc, o, title)
	}
	counters := new(loadgen.Counters)
	t := &tally{rejectLabel: rejectLabel(live.RejectStatuses(sc.Proxy.Limits))}
	view := showProgress(o.progressOut, o.progress, title, sc.Duration, t, func() time.Duration {
		p := counters.Snapshot()
		for i, n := range p.Outcomes {
			t.outcome[i].Store(n)
		}
		t.total.Store(p.Done())
		return p.Elapsed
	})
	res, err := live.Run(ctx, sc, live.Options{
		Target:          o.target,
		BackendStatsURL: o.statsURL,
		AllowRemote:     o.allowRemote,
		Counters:        counters,
		Transport:       o.transport,
		Calibrated: func(c live.Calibration) {
			if o.progressOut != nil {
				fmt.Fprintln(o.progressOut, c)
			}
		},
		Version:     version(),
		CommandLine: o.commandLine,
	})
	view.Stop()
	var te *live.TargetError
	if errors.As(err, &te) {
		err = asUsage(err)
	}
	return res, err
}

func playSim(ctx context.Context, sc *scenarios.Scenario, o playOptions, title string) (*report.Results, error) {
	rec := report.NewRecorder(sc)
	t := &tally{next: rec, rejectLabel: rejectLabel(live.RejectStatuses(sc.Proxy.Limits))}
	view := showProgress(o.progressOut, o.progress, title, sc.Duration, t, nil)
	start := time.Now()
	st, err := sim.Run(ctx, sc, t, sim.Options{Sampler: rec})
	view.Stop()
	interrupted := st.Interrupted || errors.Is(err, context.Canceled)
	if err != nil && !interrupted {
		return nil, err
	}
	info := report.RunInfo{
		Engine:      "sim",
		Start:       start,
		Wall:        time.Since(start),
		Interrupted: interrupted,
		Backend:     st.Backend,
		Version:     version(),
		CommandLine: o.commandLine,
	}
	if interrupted {
		// How far the model got; zero would mean the whole duration.
		info.Model = max(min(st.End, sc.Duration), time.Nanosecond)
	}
	return rec.Results(info), nil
}
