package scenarios

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"stampede/workerpool"
)

// Trace is the companion file of a scenario whose loads have model:
// trace: every arrival of every such tenant, as recorded (stampede import
// writes one from an access log). The zero Trace holds none.
//
// The file is text, one record a line: "t GROUP N" starts tenant N (from 1)
// of a group; "r ROUTE GAP GAP ..." gives arrivals of that tenant to a
// route, each GAP the microseconds since the previous arrival of the same
// tenant and route (the first since the start of the run); a route's
// records may repeat, each going on from where the last one ended. Lines
// starting with # are comments. A gzip file is read as such.
type Trace struct {
	// Groups holds, per group name, per tenant (index N-1), the arrivals
	// in time order. TraceArrival.Route indexes the scenario's
	// Backend.Routes.
	Groups map[string][][]TraceArrival
}

// TraceArrival is one arrival of a trace: its model time from the start of
// the run and the route (an index into Backend.Routes) it goes to.
type TraceArrival struct {
	At    time.Duration
	Route int32
}

// Traced is the model of a load whose arrivals are a recorded trace
// (model: trace), from the scenario's Trace file.
const Traced Model = 2

// maxTraceArrivals bounds a trace, at 16 bytes an arrival in memory.
const maxTraceArrivals = 200_000_000

// Count returns the number of arrivals in t.
func (t *Trace) Count() int {
	n := 0
	for _, g := range t.Groups {
		for _, a := range g {
			n += len(a)
		}
	}
	return n
}

// TraceWriter writes a trace file a tenant at a time, in bounded memory;
// NewTraceWriter makes one (the zero TraceWriter is not usable). Write
// errors are kept and returned by Close. It is not safe for concurrent use.
type TraceWriter struct {
	bw  *bufio.Writer
	buf []byte
	err error
}

// NewTraceWriter returns a TraceWriter writing to w, its header written.
func NewTraceWriter(w io.Writer) *TraceWriter {
	tw := &TraceWriter{bw: bufio.NewWriterSize(w, 64<<10)}
	tw.write([]byte("# stampede trace v1: per tenant, per route, microseconds between arrivals (the first from the start of the run)\n"))
	return tw
}

func (tw *TraceWriter) write(b []byte) {
	if tw.err == nil {
		_, tw.err = tw.bw.Write(b)
	}
}

// Tenant starts tenant n (from 1) of group.
func (tw *TraceWriter) Tenant(group string, n int) {
	tw.buf = fmt.Appendf(tw.buf[:0], "t %s %d\n", group, n)
	tw.write(tw.buf)
}

// Route writes the current tenant's arrivals to route, at model times ats
// in order (rounded down to the microsecond). Route may be called once per
// route and tenant.
func (tw *TraceWriter) Route(route string, ats []time.Duration) {
	prev := time.Duration(0)
	for j := 0; j < len(ats); j += 1000 {
		tw.buf = append(tw.buf[:0], "r "...)
		tw.buf = append(tw.buf, route...)
		for _, at := range ats[j:min(j+1000, len(ats))] {
			tw.buf = append(tw.buf, ' ')
			tw.buf = strconv.AppendInt(tw.buf, int64(at/time.Microsecond-prev/time.Microsecond), 10)
			prev = at
		}
		tw.buf = append(tw.buf, '\n')
		tw.write(tw.buf)
	}
}

// Close flushes what is buffered and returns the first write error.
func (tw *TraceWriter) Close() error {
	if tw.err != nil {
		return tw.err
	}
	return tw.bw.Flush()
}

// readTrace reads the companion file at path for s, whose groups and
// routes it names, and checks it against them.
func readTrace(path string, s *Scenario) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var r io.Reader = br
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		defer gz.Close()
		r = gz
	}
	return parseTrace(r, s)
}

// parseTrace reads a trace for s.
func parseTrace(r io.Reader, s *Scenario) (*Trace, error) {
	t := &Trace{Groups: map[string][][]TraceArrival{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	line := 0
	var cur []TraceArrival // the current tenant's arrivals
	var curGroup *TenantGroup
	curN := 0
	last := map[int32]time.Duration{} // per route, the current tenant's last arrival
	total := 0
	seen := map[string]bool{}
	flush := func() {
		if curGroup != nil {
			slices.SortStableFunc(cur, func(a, b TraceArrival) int { return int(min(max(a.At-b.At, -1), 1)) })
			t.Groups[curGroup.Group][curN-1] = cur
		}
		cur = nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...))
	}
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 || b[0] == '#' {
			continue
		}
		kind, rest, _ := bytes.Cut(b, []byte{' '})
		switch string(kind) {
		case "t":
			flush()
			fields := strings.Fields(string(rest))
			if len(fields) != 2 {
				return nil, bad("want t GROUP N")
			}
			g := s.Group(fields[0])
			if g == nil {
				return nil, bad("no tenant group %q in the scenario", fields[0])
			}
			if g.Load.Model != Traced {
				return nil, bad("group %s has model %s, not trace", g.Group, g.Load.Model)
			}
			n, err := strconv.Atoi(fields[1])
			if err != nil || n < 1 || n > max(g.Count, 1) {
				return nil, bad("tenant %q of group %s: want a number from 1 to %d", fields[1], g.Group, max(g.Count, 1))
			}
			if t.Groups[g.Group] == nil {
				t.Groups[g.Group] = make([][]TraceArrival, max(g.Count, 1))
			}
			key := g.Group + " " + fields[1]
			if seen[key] {
				return nil, bad("tenant %d of group %s appears twice", n, g.Group)
			}
			seen[key] = true
			curGroup, curN = g, n
			clear(last)
		case "r":
			if curGroup == nil {
				return nil, bad("an r line before any t line")
			}
			name, gaps, _ := bytes.Cut(rest, []byte{' '})
			ri := s.Backend.Route(string(name))
			if ri < 0 {
				return nil, bad("no route %q in backend.routes", name)
			}
			if !slices.ContainsFunc(curGroup.Load.Routes, func(w WeightedRoute) bool { return w.Route == ri }) {
				return nil, bad("route %s is not among group %s's load.routes", name, curGroup.Group)
			}
			at := last[int32(ri)]
			for len(gaps) > 0 {
				var tok []byte
				tok, gaps, _ = bytes.Cut(gaps, []byte{' '})
				if len(tok) == 0 {
					continue
				}
				us, err := strconv.ParseInt(string(tok), 10, 64)
				if err != nil || us < 0 || us > int64(s.Duration/time.Microsecond) {
					return nil, bad("%q is not a gap in microseconds from 0 to the run's %s", tok, workerpool.FormatDuration(s.Duration))
				}
				at += time.Duration(us) * time.Microsecond
				if at >= s.Duration {
					return nil, bad("an arrival at %s, not before the end of the run at %s", at, workerpool.FormatDuration(s.Duration))
				}
				if total++; total > maxTraceArrivals {
					return nil, bad("more than %d arrivals", maxTraceArrivals)
				}
				cur = append(cur, TraceArrival{At: at, Route: int32(ri)})
			}
			last[int32(ri)] = at
		default:
			return nil, bad("%q is not t GROUP N or r ROUTE GAPS", b[:min(len(b), 40)])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, bad("%v", err)
	}
	flush()
	return t, nil
}

// attachTrace reads the trace s names, or takes cached (a trace read for
// the same file before, by With), and sets each trace load's Rate to its
// tenants' mean rate, which estimates that need a rate use.
func (s *Scenario) attachTrace(name string, cached *Trace) *Error {
	uses := false
	for _, g := range s.Tenants {
		if g.Load.Model == Traced {
			uses = true
		}
	}
	switch {
	case s.TraceFile == "" && uses:
		return &Error{File: name, Path: "trace", Msg: "a load has model: trace but the file names no trace (want e.g. trace: incident.trace)"}
	case s.TraceFile == "":
		return nil
	}
	path := s.TraceFile
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(name), path)
	}
	t := cached
	if t == nil {
		var err error
		if t, err = readTrace(path, s); err != nil {
			return &Error{File: path, Path: "trace", Msg: "reading the trace: " + err.Error(), Err: err}
		}
	}
	s.trace = t
	for gi := range s.Tenants {
		g := &s.Tenants[gi]
		if g.Load.Model != Traced {
			continue
		}
		n := 0
		for _, a := range t.Groups[g.Group] {
			n += len(a)
		}
		span := g.Load.End(s.Duration) - g.Load.Start
		g.Load.Rate = float64(n) / float64(max(g.Count, 1)) / max(span.Seconds(), 1e-9)
	}
	return nil
}

// TraceOf returns the arrivals of tenant n (from 1) of group, or nil.
func (s *Scenario) TraceOf(group string, n int) []TraceArrival {
	if s.trace == nil {
		return nil
	}
	g := s.trace.Groups[group]
	if n < 1 || n > len(g) {
		return nil
	}
	return g[n-1]
}

// LoadedTrace returns the trace the scenario's trace: file holds, or nil.
func (s *Scenario) LoadedTrace() *Trace { return s.trace }
