package workerpool

import (
	"errors"
	"fmt"
	"time"

	"stampede/internal/errtree"
)

// AbortPolicy says what a worker does when the client of its request goes
// away.
type AbortPolicy uint8

const (
	// Continue is gunicorn's sync worker: it does not notice the client left
	// and finishes the work, holding the worker until then. Requests still in
	// the backlog are run too when their turn comes, since the kernel has
	// queued the whole request.
	Continue AbortPolicy = iota
	// Cancel frees the worker, or drops the queued request, at once.
	Cancel
)

// OverflowPolicy says what the kernel does with a connection attempt that
// finds the listen backlog full.
type OverflowPolicy uint8

const (
	// Drop is Linux's default (net.ipv4.tcp_abort_on_overflow = 0): the
	// SYN is dropped and the client's kernel sends it again on the
	// schedule of SYNRetry, so the connection is made late, or the client
	// gives up first.
	Drop OverflowPolicy = iota
	// Reset is tcp_abort_on_overflow = 1: the attempt is refused at once,
	// and a proxy in front answers 502.
	Reset
)

// The policies' names in a scenario, by value.
var (
	abortNames    = [...]string{Continue: "continue", Cancel: "cancel"}
	overflowNames = [...]string{Drop: "drop", Reset: "reset"}
)

// String returns the policy as a scenario names it.
func (a AbortPolicy) String() string { return enumName(abortNames[:], a, "on_client_abort") }

// String returns the policy as a scenario names it.
func (o OverflowPolicy) String() string { return enumName(overflowNames[:], o, "backlog_overflow") }

// enumName returns the name of v, or kind(v) for a value that has none (one
// that Validate refuses).
func enumName[E ~uint8](names []string, v E, kind string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", kind, uint8(v))
}

// DefaultWorkers is gunicorn's default number of workers.
const DefaultWorkers = 1

// DefaultBacklog is gunicorn's default listen backlog.
const DefaultBacklog = 2048

// DefaultBoot is how long a replacement worker takes to be ready, measured
// on real gunicorn 20.1 (Debian's package) with a trivial WSGI app: from the
// connection of the killed worker's request dropping to a queued request
// being served, median 0.26 s, 0.10 to 0.44 s over twelve kills on a
// loaded two-core machine.
const DefaultBoot = 260 * time.Millisecond

// WorkerConnections is gunicorn's default worker_connections: a gthread
// worker accepts connections up to it, whether or not a thread is free.
const WorkerConnections = 1000

// Config describes a pool of gunicorn workers.
type Config struct {
	// Workers is the number of worker processes. Zero means 1.
	Workers int
	// Threads is the number of requests each worker serves at once. Zero
	// or 1 is gunicorn's sync worker; more is the gthread worker, which
	// the timeout does not kill (its heartbeat is its main loop, which a
	// long request does not block) and which accepts connections up to
	// WorkerConnections whether or not a thread is free.
	Threads int
	// Backlog is the listen(2) backlog. Linux's accept queue holds one
	// more than it: Backlog+1 connections may wait for a worker. Zero
	// means DefaultBacklog; a negative value means none may wait.
	Backlog int
	// Overflow says what a connection attempt over the backlog meets. The
	// zero value is Drop, Linux's default.
	Overflow OverflowPolicy
	// Timeout is gunicorn's worker timeout: a sync worker still on one
	// request more than this long after it accepted it is killed, with
	// the request, on the arbiter's next tick (see ArbiterTick), so
	// between Timeout and Timeout+ArbiterTick after it started. Zero
	// means no timeout.
	Timeout time.Duration
	// Boot is how long a worker that exited (killed, or recycled by
	// MaxRequests) takes to be replaced by a ready one. Zero means at
	// once; gunicorn's is about DefaultBoot.
	Boot time.Duration
	// MaxRequests recycles a worker after it served this many requests
	// plus a draw from 0 to MaxRequestsJitter, made anew for every
	// worker, as gunicorn's max_requests and max_requests_jitter do. Zero
	// means never.
	MaxRequests       int
	MaxRequestsJitter int
	// OnClientAbort says what happens to the work of a client that left.
	// The zero value is Continue.
	OnClientAbort AbortPolicy
	// Seed seeds the arbiter's tick phase and the MaxRequestsJitter draws,
	// so that one seed always gives the same kills and recycling.
	Seed uint64
}

func (c Config) workers() int {
	if c.Workers <= 0 {
		return 1
	}
	return c.Workers
}

func (c Config) threads() int { return max(c.Threads, 1) }

// ListenBacklog returns the listen(2) backlog: Backlog, DefaultBacklog for
// zero, and 0 for a negative one.
func (c Config) ListenBacklog() int {
	switch {
	case c.Backlog == 0:
		return DefaultBacklog
	case c.Backlog < 0:
		return 0
	}
	return c.Backlog
}

// queue returns how many connections may wait: the kernel's accept queue,
// and for gthread workers the connections they accept beyond their threads.
func (c Config) queue() int {
	q := 0
	switch {
	case c.Backlog == 0:
		q = DefaultBacklog + 1
	case c.Backlog > 0:
		q = c.Backlog + 1
	}
	if t := c.threads(); t > 1 && t < WorkerConnections {
		q += c.workers() * (WorkerConnections - t)
	}
	return q
}

// Bounds of a Config, which Validate enforces. Every front door (a scenario
// file, --set, the backend command's flags) is checked against these, so
// that what one engine accepts the other plays. Each is far above what a
// real gunicorn is given and below what would exhaust the machine playing
// it: a live backend runs a goroutine per request in flight, so workers ×
// threads + backlog bounds its goroutines.
const (
	// MaxWorkers bounds Workers.
	MaxWorkers = 1 << 16
	// MaxThreads bounds Threads: a gthread worker serves at most its
	// WorkerConnections at once.
	MaxThreads = WorkerConnections
	// MaxBacklog bounds Backlog; Linux caps a listen backlog at
	// net.core.somaxconn, 4096 by default.
	MaxBacklog = 1 << 20
	// MaxTimeout bounds Timeout: 30 days, the longest run stampede plays.
	MaxTimeout = 30 * 24 * time.Hour
	// MaxBoot bounds Boot.
	MaxBoot = time.Hour
	// MaxMaxRequests bounds MaxRequests and MaxRequestsJitter.
	MaxMaxRequests = 1<<31 - 1
)

// FieldError is a Config field out of its bounds. Field is the setting's
// name as gunicorn and a scenario file spell it ("workers",
// "max_requests_jitter"), so that a caller can point at where the value
// came from.
type FieldError struct {
	Field string
	Msg   string // the value and what is wrong with it: "70000 is over 65536"
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Validate reports every field of c out of its bounds (see MaxWorkers and
// the constants beside it), each as a *FieldError, joined with
// errors.Join; nil when c is fine. The zero values the fields document
// (Workers 0 means 1, Backlog 0 means DefaultBacklog and negative none) are
// fine.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	count := func(field string, v, hi int) {
		switch {
		case v < 0:
			bad(field, "%d is below 0", v)
		case v > hi:
			bad(field, "%d is over %d", v, hi)
		}
	}
	span := func(field string, v, hi time.Duration) {
		switch {
		case v < 0:
			bad(field, "%v is negative", v)
		case v > hi:
			bad(field, "%v is longer than %v", FormatDuration(v), FormatDuration(hi))
		}
	}
	count("workers", c.Workers, MaxWorkers)
	count("threads", c.Threads, MaxThreads)
	if c.Backlog > MaxBacklog {
		bad("backlog", "%d is over %d", c.Backlog, MaxBacklog)
	}
	span("timeout", c.Timeout, MaxTimeout)
	span("boot", c.Boot, MaxBoot)
	count("max_requests", c.MaxRequests, MaxMaxRequests)
	count("max_requests_jitter", c.MaxRequestsJitter, MaxMaxRequests)
	if c.OnClientAbort != Continue && c.OnClientAbort != Cancel {
		bad("on_client_abort", "%d is not continue or cancel", c.OnClientAbort)
	}
	if c.Overflow != Drop && c.Overflow != Reset {
		bad("backlog_overflow", "%d is not drop or reset", c.Overflow)
	}
	return errors.Join(errs...)
}

// FieldErrors returns the *FieldError values in err, as Validate returns
// them, through any wrapping; none for nil.
func FieldErrors(err error) []*FieldError {
	return errtree.Find[*FieldError](err, nil)
}
