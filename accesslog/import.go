package accesslog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// ErrBadInput is wrapped by every error of Import that is the input's
// fault: a file that is not the format, too many bad lines, an empty
// window, a format without what import needs.
var ErrBadInput = errors.New("bad input")

func badInput(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadInput, fmt.Sprintf(format, args...))
}

// Defaults of ImportOptions: gunicorn's own.
const (
	DefaultWorkers     = 1
	DefaultBacklog     = 2048
	DefaultTimeout     = 30 * time.Second
	DefaultReadTimeout = 60 * time.Second // nginx's proxy_read_timeout
	// DefaultMaxBad is the share of bad lines over which Import fails
	// unless Lenient.
	DefaultMaxBad = 0.01
)

// ImportOptions configure Import. The zero value reads nginx's combined
// format, keys tenants by $host, and writes a gunicorn backend's defaults.
type ImportOptions struct {
	// Logs are the nginx access logs, read in order (gzip or not).
	Logs []string
	// Format compiles the nginx logs' format; nil means combined.
	Format *Format
	// GunicornLogs are gunicorn access logs whose worker times (%(D)s and
	// the like) give the service times, in place of nginx's upstream times.
	GunicornLogs []string
	// GunicornFormat compiles the gunicorn logs' format; nil means
	// GunicornWorkerTime, what `stampede backend --access-log` writes.
	GunicornFormat *Format
	// From and To bound the window of arrivals read: From included, To
	// excluded. Zero means unbounded.
	From, To time.Time
	// TenantKey is what makes a tenant: "$host" (the zero value) or
	// "$remote_addr".
	TenantKey string
	// Workers, Backlog, Timeout and ReadTimeout are the backend's and the
	// proxy's settings the scenario gets; zero means gunicorn's (and
	// nginx's) defaults.
	Workers     int
	Backlog     int
	Timeout     time.Duration
	ReadTimeout time.Duration
	// Fit writes open-model rate stages per minute and tenant group in place
	// of the exact trace.
	Fit bool
	// Lenient reads on past more than MaxBad bad lines.
	Lenient bool
	// LogTimeScale is the time_scale of a stampede live run that wrote the
	// logs (a staging run): their times are model times multiplied by it,
	// and Import divides them back. Zero means 1, a real incident.
	LogTimeScale float64
	// Name is the scenario's name; TraceFile is the companion file's name
	// as the scenario refers to it (next to it). Both required.
	Name, TraceFile string
	// Progress, when not nil, is called about every MiB read with the
	// bytes read so far and the total size of the files (0 when unknown).
	Progress func(read, total int64)
	// Open opens a log; nil means os.Open.
	Open func(name string) (io.ReadCloser, error)
}

// Summary says what Import read and what it made of it.
type Summary struct {
	Files []FileSummary
	// Lines read in all, Used for the scenario; Skipped by reason
	// ("outside the window", "no request line"); Bad lines did not match.
	Lines, Used, Bad int64
	Skipped          map[string]int64
	// Precision of the arrivals, and from what.
	Precision     time.Duration
	PrecisionFrom string
	Start         time.Time     // model time 0
	Duration      time.Duration // the scenario's, model time
	Tenants       int
	TenantKey     string
	Heavy         []Heavy
	Routes        int // routes kept
	Folded        int // rare paths folded into the route "other"
	ServiceFrom   string
	Notes         []string
	Requests      map[string]int64 // per tenant key, requests in the scenario
}

// FileSummary is one file's counts.
type FileSummary struct {
	Name     string
	Lines    int64
	Bad      int64
	FirstBad []*LineError
}

// Heavy is a tenant singled out as a group of its own.
type Heavy struct {
	Key      string  // the host (or address)
	Group    string  // its group's name
	Share    float64 // of all worker time
	Requests int64
}

// recBits split a record's key into tenant and route.
const (
	routeBits  = 12
	maxRoutes  = 1<<routeBits - 1 // the last id is the overflow route
	maxTenants = 1 << (32 - routeBits)
)

// importer is one Import's state.
type importer struct {
	opts       ImportOptions
	scale      float64
	base       int64 // Unix ms of tick 0
	baseSet    bool
	ticks      []uint64 // per request: tick (ms of log time since base) << 32 | tenant << routeBits | route
	ups        []uint32 // per request: its upstream (or request) time in µs, noSample when it is none
	tenantIDs  map[string]uint32
	tenants    []string
	routeIDs   map[string]uint32
	routes     []string
	inflight   []float32 // per second since base: requests at the backend, on average
	work       []float64 // per tenant: worker time (µs), from gunicorn when it names hosts
	workExact  bool
	routesFull bool          // the route table overflowed
	local      map[int]int64 // per status, requests nginx answered without the upstream
	svc        []*hist       // per route: service times (µs, log time)
	sum        Summary
	scratch    []byte
	readBytes  int64
	total      int64
	lastProg   int64
	upstream   bool  // the nginx format has $upstream_response_time
	from, to   int64 // the window, Unix ns: from included, to excluded
}

const noSample = math.MaxUint32

// stampedePaths prefix the paths a live run of stampede sends to measure
// itself (fakebackend.StatsPath, WaitPath), which are not the incident.
var stampedePaths = []byte("/_stampede/")

// Import reads the logs of an incident and writes a scenario that replays
// it to scenario, and its trace (unless Fit) to trace. It reads each file
// once, in memory bounded by about 12 bytes a request.
func Import(ctx context.Context, opts ImportOptions, scenario, trace io.Writer) (*Summary, error) {
	im := &importer{opts: opts, tenantIDs: map[string]uint32{}, routeIDs: map[string]uint32{}}
	im.sum.Skipped = map[string]int64{}
	im.scale = opts.LogTimeScale
	if im.scale == 0 {
		im.scale = 1
	}
	if !(im.scale > 0 && im.scale <= 1) {
		return nil, fmt.Errorf("import: log time scale %v: want a number in (0, 1]", opts.LogTimeScale)
	}
	if opts.Name == "" || opts.TraceFile == "" && !opts.Fit {
		return nil, errors.New("import: a scenario name and a trace file name are required")
	}
	if len(opts.Logs) == 0 {
		return nil, badInput("no access log to read")
	}
	if im.opts.Format == nil {
		im.opts.Format, _ = CompileNginx("combined", NginxOptions{})
	}
	if im.opts.GunicornFormat == nil {
		im.opts.GunicornFormat, _ = CompileGunicorn(GunicornWorkerTime)
	}
	if im.opts.Open == nil {
		im.opts.Open = func(name string) (io.ReadCloser, error) { return os.Open(name) }
	}
	if err := im.checkFormats(); err != nil {
		return nil, err
	}
	im.upstream = im.opts.Format.Has("upstream_time")
	im.from, im.to = math.MinInt64, math.MaxInt64
	if !opts.From.IsZero() {
		im.from = opts.From.UnixNano()
	}
	if !opts.To.IsZero() {
		im.to = opts.To.UnixNano()
	}
	for _, name := range append(slices.Clone(opts.Logs), opts.GunicornLogs...) {
		if fi, err := os.Stat(name); err == nil {
			im.total += fi.Size()
		}
	}
	for _, name := range opts.Logs {
		if err := im.readFile(ctx, name, im.opts.Format, im.nginxEntry); err != nil {
			return nil, err
		}
	}
	if err := im.checkRead(); err != nil {
		return nil, err
	}
	im.noteLocal()
	if len(opts.GunicornLogs) > 0 {
		im.svc = nil
		for _, name := range opts.GunicornLogs {
			if err := im.readFile(ctx, name, im.opts.GunicornFormat, im.gunicornEntry); err != nil {
				return nil, err
			}
		}
		im.sum.ServiceFrom = "gunicorn's own worker times (" + workerAtom(im.opts.GunicornFormat) + ")"
	} else {
		im.nginxService()
	}
	// The largest array but one, no longer needed: the trace is ordered in it.
	scratch := im.ups
	im.ups = nil
	b, err := im.build(scratch)
	if err != nil {
		return nil, err
	}
	if err := b.write(scenario, trace); err != nil {
		return nil, err
	}
	return &im.sum, nil
}

// checkFormats checks that the formats carry what import needs.
func (im *importer) checkFormats() error {
	f := im.opts.Format
	if !f.Has("time") {
		return badInput("log format %q has no time ($msec, $time_local or $time_iso8601)", f.Source())
	}
	if !f.Has("path") {
		return badInput("log format %q has no request ($request, or $request_uri or $uri)", f.Source())
	}
	switch im.opts.TenantKey {
	case "", "$host", "$server_name", "$http_host":
		im.sum.TenantKey = "$host"
		if !f.Has("host") {
			if !f.Has("addr") {
				return badInput("log format %q has neither $host nor $remote_addr: nothing tells the tenants apart", f.Source())
			}
			im.sum.TenantKey = "$remote_addr"
			im.sum.Notes = append(im.sum.Notes, "the log format has no $host, so tenants are client addresses ($remote_addr); add $host to the log_format for a tenant per site")
		}
	case "$remote_addr", "$binary_remote_addr":
		if !f.Has("addr") {
			return badInput("--tenant-key %s: log format %q has no $remote_addr", im.opts.TenantKey, f.Source())
		}
		im.sum.TenantKey = "$remote_addr"
	default:
		return badInput("--tenant-key %q: want $host or $remote_addr", im.opts.TenantKey)
	}
	if f.Has("msec") {
		im.sum.Precision, im.sum.PrecisionFrom = time.Millisecond, "$msec"
	} else {
		im.sum.Precision, im.sum.PrecisionFrom = time.Second, "$time_local has whole seconds only; add $msec to the log_format for arrivals to the millisecond"
	}
	if !f.Has("request_time") {
		im.sum.Notes = append(im.sum.Notes, "the log format has no $request_time: arrivals are the logged times, which are when requests ended")
	}
	if len(im.opts.GunicornLogs) > 0 {
		g := im.opts.GunicornFormat
		if !g.Has("request_time") {
			return badInput("gunicorn log format %q has no worker time (want %%(D)s, or %%(L)s)", g.Source())
		}
		if !g.Has("path") {
			return badInput("gunicorn log format %q has no request (want %%(r)s or %%(U)s)", g.Source())
		}
	} else if !f.Has("upstream_time") && !f.Has("request_time") {
		return badInput("log format %q has neither $upstream_response_time nor $request_time, and there is no --gunicorn-log: nothing says how long requests took", f.Source())
	}
	return nil
}

// workerAtom names the gunicorn format's worker-time atom.
func workerAtom(f *Format) string {
	for _, s := range f.segs {
		switch s.kind {
		case kMicros, kMillis, kSeconds, kWholeSeconds:
			return s.name
		}
	}
	return "?"
}

// readFile streams one log through f, handing each entry to use.
func (im *importer) readFile(ctx context.Context, name string, f *Format, use func(*Entry) error) error {
	rc, err := im.opts.Open(name)
	if err != nil {
		return badInput("reading %s: %v", name, err)
	}
	defer rc.Close()
	counted := &countReader{r: rc}
	rd, err := NewReader(name, counted, f.Clone())
	if err != nil {
		return badInput("%v", err)
	}
	var size int64
	if fi, err := os.Stat(name); err == nil && !rd.Compressed() {
		size = fi.Size()
	}
	var e Entry
	n := 0
	for rd.Next(&e) {
		if n == 4096 && size > 0 && f == im.opts.Format {
			im.reserve(size, rd.Stats().Bytes, rd.Line())
		}
		if err := use(&e); err != nil {
			return fmt.Errorf("%s:%d: %w", name, rd.Line(), err)
		}
		if n++; n%65536 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			im.progress(counted.n)
		}
	}
	im.progress(counted.n)
	im.readBytes += counted.n
	if err := rd.Err(); err != nil {
		return err
	}
	st := rd.Stats()
	im.sum.Files = append(im.sum.Files, FileSummary{Name: name, Lines: st.Lines, Bad: st.Bad, FirstBad: st.FirstBad})
	im.sum.Lines += st.Lines
	im.sum.Bad += st.Bad
	if st.Lines > 0 && float64(st.Bad) > DefaultMaxBad*float64(st.Lines) && !im.opts.Lenient {
		var b strings.Builder
		fmt.Fprintf(&b, "%s: %d of %d lines (%.1f%%) do not match the log format %q (more than %.0f%%; --lenient reads on)", name, st.Bad, st.Lines, 100*float64(st.Bad)/float64(st.Lines), f.Source(), DefaultMaxBad*100)
		for _, le := range st.FirstBad {
			fmt.Fprintf(&b, "\n  %s", le)
		}
		return badInput("%s", b.String())
	}
	return nil
}

// reserve grows the per-request arrays once for a file of size bytes, of
// which read held lines: appending a few hundred MB a doubling at a time
// would hold the old array and the new at once, and their garbage.
func (im *importer) reserve(size, read, lines int64) {
	if read <= 0 || lines <= 0 {
		return
	}
	more := int(float64(size) / (float64(read) / float64(lines)) * 1.02)
	im.ticks = slices.Grow(im.ticks, more)
	im.ups = slices.Grow(im.ups, more)
}

func (im *importer) progress(n int64) {
	if im.opts.Progress == nil {
		return
	}
	if at := im.readBytes + n; at-im.lastProg >= 1<<20 || at == im.total {
		im.lastProg = at
		im.opts.Progress(at, im.total)
	}
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// inWindow reports whether an arrival at ns (Unix) is in the window.
func (im *importer) inWindow(ns int64) bool {
	return ns >= im.from && ns < im.to
}

// nginxEntry takes one request of the nginx log.
func (im *importer) nginxEntry(e *Entry) error {
	if e.Path == nil {
		im.sum.Skipped["no request line"]++
		return nil
	}
	if bytes.HasPrefix(e.Path, stampedePaths) {
		im.sum.Skipped["stampede's own probes ("+string(stampedePaths)+"...)"]++
		return nil
	}
	rt := max(e.RequestTime, 0)
	arrival := e.End - int64(rt)
	if !im.inWindow(arrival) {
		im.sum.Skipped["outside the window"]++
		return nil
	}
	ms := arrival / int64(time.Millisecond)
	if !im.baseSet {
		// A day of margin: files need not be in order.
		im.base, im.baseSet = ms-86_400_000, true
	}
	tick := ms - im.base
	if tick < 0 || tick >= math.MaxUint32 {
		return badInput("an arrival at %s is more than a day before the first or 49 days after it (narrow it with --from/--to)", time.UnixMilli(ms).UTC().Format(time.RFC3339))
	}
	key := e.Host
	if im.sum.TenantKey == "$remote_addr" {
		key = e.Addr
	}
	if len(key) == 0 {
		key = []byte("-")
	}
	tid, ok := im.tenantIDs[string(key)]
	if !ok {
		if len(im.tenants) >= maxTenants {
			return badInput("more than %d tenants", maxTenants)
		}
		tid = uint32(len(im.tenants))
		im.tenants = append(im.tenants, string(key))
		im.tenantIDs[string(key)] = tid
		im.work = append(im.work, 0)
	}
	rid := im.route(e.Path)
	im.ticks = append(im.ticks, uint64(tick)<<32|uint64(tid)<<routeBits|uint64(rid))
	up := uint32(noSample)
	d := e.Upstream
	if d == Unknown && !im.upstream {
		d = e.RequestTime
	}
	if d >= 0 {
		us := min(d/time.Microsecond, noSample-1)
		if e.Status < 500 && e.UpstreamStatus < 500 {
			up = uint32(us)
		}
		// The request was at the backend from End-d to End.
		im.occupy(e.End/int64(time.Millisecond)-im.base, int64(d/time.Millisecond))
	}
	im.ups = append(im.ups, up)
	im.sum.Used++
	if e.Upstream == Unknown && im.upstream {
		if im.local == nil {
			im.local = map[int]int64{}
		}
		im.local[e.Status]++
	}
	return nil
}

// noteLocal says how many requests nginx answered itself.
func (im *importer) noteLocal() {
	if len(im.local) == 0 {
		return
	}
	var n int64
	statuses := make([]int, 0, len(im.local))
	for st, c := range im.local {
		n += c
		statuses = append(statuses, st)
	}
	slices.Sort(statuses)
	var parts []string
	for _, st := range statuses {
		parts = append(parts, fmt.Sprintf("%d ×%d", st, im.local[st]))
	}
	im.sum.Notes = append(im.sum.Notes, fmt.Sprintf("%d requests never reached the backend (nginx answered them itself: %s); the replay, without limits, sends them all to it", n, strings.Join(parts, ", ")))
}

// route interns a path's route.
func (im *importer) route(path []byte) uint32 {
	im.scratch = NormalPath(im.scratch[:0], path)
	rid, ok := im.routeIDs[string(im.scratch)]
	if !ok {
		if len(im.routes) >= maxRoutes {
			if !im.routesFull {
				im.routesFull = true
				im.sum.Notes = append(im.sum.Notes, fmt.Sprintf("more than %d distinct paths after normalisation: the later new ones are folded into the route \"other\" as they come", maxRoutes))
			}
			return maxRoutes
		}
		rid = uint32(len(im.routes))
		im.routes = append(im.routes, string(im.scratch))
		im.routeIDs[string(im.scratch)] = rid
	}
	return rid
}

func (im *importer) routeName(rid uint32) string {
	if int(rid) < len(im.routes) {
		return im.routes[rid]
	}
	return "other"
}

func (im *importer) workers() int {
	if im.opts.Workers > 0 {
		return im.opts.Workers
	}
	return DefaultWorkers
}

// checkRead fails an empty window.
func (im *importer) checkRead() error {
	if im.sum.Used > 0 {
		return nil
	}
	what := "no request in the logs"
	if n := im.sum.Skipped["outside the window"]; n > 0 {
		what = fmt.Sprintf("the window %s holds no request (%d are outside it)", im.window(), n)
	}
	return badInput("%s: %s", strings.Join(im.opts.Logs, ", "), what)
}

func (im *importer) window() string {
	f, t := "the start", "the end"
	if !im.opts.From.IsZero() {
		f = im.opts.From.UTC().Format(time.RFC3339)
	}
	if !im.opts.To.IsZero() {
		t = im.opts.To.UTC().Format(time.RFC3339)
	}
	return f + " to " + t
}

// ParseTime reads a --from/--to time: RFC 3339, "2006-01-02 15:04:05"
// (UTC), or nginx's $time_local form.
func ParseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02 15:04", "02/Jan/2006:15:04:05 -0700"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, badInput("%q is not a time (want e.g. 2026-12-01T14:05:00Z, 2026-12-01 14:05:00 or 01/Dec/2026:14:05:00 +0000)", s)
}
