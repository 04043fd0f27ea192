package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"stampede/accesslog"
	"stampede/scenarios"
)

type importFlags struct {
	out, logFormat, gunicornFormat string
	gunicornLogs, logVars          []string
	logTimeScale                   float64
	from, to, tenantKey            string
	workers, backlog               int
	timeout, readTimeout           time.Duration
	fit, lenient, noProgress       bool
}

func newImportCmd() *cobra.Command {
	var f importFlags
	c := &cobra.Command{
		Use:   "import ACCESS.LOG... [--log-format 'nginx log_format'] [--gunicorn-log FILE] [--from T --to T] [--workers N] [-o scenario.yaml]",
		Short: "Turn an incident's access logs into a scenario that replays it",
		Long: `import reads nginx access logs (gzip or not) by their own log_format and writes
a scenario that replays the incident: a tenant per host (or per client address),
the heaviest by worker time as groups of their own, routes by normalised path
with their service times as measured, and the arrivals as the exact trace in a
companion file next to the scenario (or, with --fit, rates per minute).

--log-format takes the log_format line from nginx.conf as it stands
(log_format main '$host $msec $request_time ...';), the format string alone, or
combined (the default). For arrivals to the millisecond the format needs $msec;
$time_local has whole seconds. With --gunicorn-log, service times are the
workers' own (%(D)s); otherwise they are nginx's upstream times from the periods
when the pool was not saturated.

The proxy gets no limits: the file is the incident as it was. Play it, then
sweep a limit with compare. A line that does not match the format is counted;
more than 1% of them is an error unless --lenient.`,
		Example: `  stampede import /var/log/nginx/access.log.1 access.log.2.gz \
      --log-format "log_format main '\$host \$msec \$request_time \$upstream_response_time \"\$request\" \$status';" \
      --from '2026-12-01 14:00' --to '2026-12-01 14:30' --workers 8 --timeout 120s -o incident.yaml
  stampede run incident.yaml --engine sim
  stampede compare incident.yaml --engine sim --sweep proxy.limit_conn.per_key=off,2,4,8`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runImport(c, args, &f) },
	}
	fl := c.Flags()
	fl.StringVarP(&f.out, "output", "o", "imported.yaml", "the scenario file to write; its trace goes next to it, with .trace for .yaml")
	fl.StringVar(&f.logFormat, "log-format", "combined", "the nginx log_format of the logs: combined, the format string, or the whole log_format directive")
	fl.StringArrayVar(&f.logVars, "log-var", nil, "a variable of your nginx configuration's own (map, set) in the format, read and ignored (repeatable)")
	fl.StringArrayVar(&f.gunicornLogs, "gunicorn-log", nil, "a gunicorn access log whose worker times give the service times (repeatable)")
	fl.StringVar(&f.gunicornFormat, "gunicorn-format", accesslog.GunicornWorkerTime, "the gunicorn access_log_format of --gunicorn-log")
	fl.StringVar(&f.from, "from", "", "read arrivals from this time on, e.g. 2026-12-01T14:00:00Z")
	fl.StringVar(&f.to, "to", "", "read arrivals before this time")
	fl.StringVar(&f.tenantKey, "tenant-key", "$host", "what makes a tenant: $host or $remote_addr")
	fl.IntVar(&f.workers, "workers", 0, "the backend's gunicorn workers (default gunicorn's 1)")
	fl.IntVar(&f.backlog, "backlog", 0, "the backend's listen backlog (default gunicorn's 2048)")
	fl.DurationVar(&f.timeout, "timeout", 0, "the backend's worker timeout (default gunicorn's 30s)")
	fl.DurationVar(&f.readTimeout, "read-timeout", 0, "the proxy's proxy_read_timeout (default nginx's 60s)")
	fl.BoolVar(&f.fit, "fit", false, "write per-minute rates per tenant group in place of the exact trace")
	fl.BoolVar(&f.lenient, "lenient", false, "read on past more than 1% of lines that do not match the format")
	fl.Float64Var(&f.logTimeScale, "log-time-scale", 1, "the time_scale of the stampede live run that wrote the logs (a staging run); 1 for a real incident")
	fl.BoolVar(&f.noProgress, "no-progress", false, "do not show progress on stderr")
	return c
}

func runImport(c *cobra.Command, logs []string, f *importFlags) error {
	format, err := accesslog.CompileNginx(f.logFormat, accesslog.NginxOptions{Vars: f.logVars})
	if err != nil {
		return usagef("--log-format: %v", err)
	}
	opts := accesslog.ImportOptions{
		Logs: logs, Format: format, GunicornLogs: f.gunicornLogs, TenantKey: f.tenantKey,
		Workers: f.workers, Backlog: f.backlog, Timeout: f.timeout, ReadTimeout: f.readTimeout,
		Fit: f.fit, Lenient: f.lenient, LogTimeScale: f.logTimeScale,
	}
	if len(f.gunicornLogs) > 0 {
		if opts.GunicornFormat, err = accesslog.CompileGunicorn(f.gunicornFormat); err != nil {
			return usagef("--gunicorn-format: %v", err)
		}
	}
	if f.workers < 0 || f.backlog < 0 || f.timeout < 0 || f.readTimeout < 0 {
		return usagef("--workers, --backlog, --timeout and --read-timeout take zero or more")
	}
	if f.from != "" {
		if opts.From, err = accesslog.ParseTime(f.from); err != nil {
			return usagef("--from: %v", err)
		}
	}
	if f.to != "" {
		if opts.To, err = accesslog.ParseTime(f.to); err != nil {
			return usagef("--to: %v", err)
		}
	}
	if !opts.From.IsZero() && !opts.To.IsZero() && !opts.To.After(opts.From) {
		return usagef("--to %s is not after --from %s: the window is empty", f.to, f.from)
	}
	base := filepath.Base(f.out)
	opts.Name = strings.TrimSuffix(base, filepath.Ext(base))
	opts.TraceFile = opts.Name + ".trace"
	tracePath := filepath.Join(filepath.Dir(f.out), opts.TraceFile)
	if !f.noProgress {
		opts.Progress = progressTo(c.ErrOrStderr())
	}

	// Write beside the targets and rename at the end: an interrupted or
	// failed import leaves any earlier files as they were.
	scTmp, err := os.CreateTemp(filepath.Dir(f.out), "."+base+".*")
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer os.Remove(scTmp.Name())
	defer scTmp.Close()
	var trTmp *os.File
	trace := io.Discard
	if !f.fit {
		if trTmp, err = os.CreateTemp(filepath.Dir(f.out), "."+opts.TraceFile+".*"); err != nil {
			return fmt.Errorf("import: %w", err)
		}
		defer os.Remove(trTmp.Name())
		defer trTmp.Close()
		trace = trTmp
	}
	sum, err := accesslog.Import(c.Context(), opts, scTmp, trace)
	if err != nil {
		switch {
		case errors.Is(err, accesslog.ErrBadInput):
			return asUsage(err)
		case errors.Is(err, context.Canceled):
			return exitCodeError{exitInterrupted, "import interrupted: nothing written, earlier files left as they were"}
		}
		return err
	}
	if err := scTmp.Close(); err != nil {
		return fmt.Errorf("import: writing %s: %w", f.out, err)
	}
	if trTmp != nil {
		if err := trTmp.Close(); err != nil {
			return fmt.Errorf("import: writing %s: %w", tracePath, err)
		}
		if err := os.Rename(trTmp.Name(), tracePath); err != nil {
			return fmt.Errorf("import: %w", err)
		}
	}
	if err := os.Rename(scTmp.Name(), f.out); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if err := checkImported(f.out, opts.TraceFile); err != nil {
		return fmt.Errorf("import wrote a scenario that does not load (a bug; please report it with the log's format): %w", err)
	}
	printImportSummary(c.OutOrStdout(), sum, f, tracePath)
	return nil
}

// checkImported loads the scenario file import wrote, with an empty trace
// in place of its own: reading a trace of millions of arrivals back would
// double what the import holds in memory, and the trace's writer is the
// one the scenario's reader is tested against.
func checkImported(path, trace string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "stampede-import-check")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, trace), nil, 0o644); err != nil {
		return err
	}
	_, err = scenarios.Parse(filepath.Join(dir, filepath.Base(path)), data)
	return err
}

// progressTo shows the bytes read on w, at most every two seconds, once
// the files are large enough for it to matter.
func progressTo(w io.Writer) func(read, total int64) {
	var last time.Time
	shown := false
	return func(read, total int64) {
		if total < 64<<20 && !shown {
			return
		}
		if now := time.Now(); now.Sub(last) >= 2*time.Second || read == total {
			last = now
			shown = true
			if total > 0 {
				fmt.Fprintf(w, "import: read %d of %d MiB (%.0f%%)\n", read>>20, total>>20, 100*float64(read)/float64(total))
			} else {
				fmt.Fprintf(w, "import: read %d MiB\n", read>>20)
			}
		}
	}
}

func printImportSummary(w io.Writer, s *accesslog.Summary, f *importFlags, tracePath string) {
	skipped := int64(0)
	for _, n := range s.Skipped {
		skipped += n
	}
	fmt.Fprintf(w, "import: %d lines read, %d used, %d skipped, %d bad\n", s.Lines, s.Used, skipped, s.Bad)
	for reason, n := range s.Skipped {
		fmt.Fprintf(w, "  skipped %d: %s\n", n, reason)
	}
	for _, fs := range s.Files {
		for _, le := range fs.FirstBad {
			fmt.Fprintf(w, "  bad %s:%v\n", fs.Name, le)
		}
	}
	fmt.Fprintf(w, "window: %s for %s of model time\n", s.Start.Format(time.RFC3339Nano), s.Duration)
	if f.fit {
		fmt.Fprintf(w, "arrivals: rates per minute (--fit)\n")
	} else {
		fmt.Fprintf(w, "arrivals: the exact trace in %s, to %s (%s)\n", tracePath, time.Duration(float64(s.Precision)/max(f.logTimeScale, 1e-9)), s.PrecisionFrom)
	}
	fmt.Fprintf(w, "service times: %s\n", s.ServiceFrom)
	fmt.Fprintf(w, "tenants: %d by %s; routes: %d", s.Tenants, s.TenantKey, s.Routes)
	if s.Folded > 0 {
		fmt.Fprintf(w, " (%d rare paths folded into \"other\")", s.Folded)
	}
	fmt.Fprintln(w)
	for _, h := range s.Heavy {
		fmt.Fprintf(w, "heavy: %s (group %s) held %.0f%% of the worker time with %d requests\n", h.Key, h.Group, 100*h.Share, h.Requests)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintf(w, "wrote %s: the incident as it was, the proxy without limits. Next:\n", f.out)
	fmt.Fprintf(w, "  stampede run %s --engine sim\n", f.out)
	fmt.Fprintf(w, "  stampede compare %s --engine sim --sweep proxy.limit_conn.per_key=off,2,4,8\n", f.out)
}
