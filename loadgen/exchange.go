package loadgen

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"time"

	"stampede/fakebackend"
	"stampede/internal/h1"
	"stampede/limiterproxy"
	"stampede/workload"
)

// The answer's headers the driver reads, as h1.Client.Get passes them.
var (
	serviceHeader = []byte(fakebackend.HeaderService)
	limitHeader   = []byte(limiterproxy.LimitHeader)
)

// serviceOf reads the fake backend's service header (model time, which is
// the worker time an answered request used) for Result.Work. A target that
// does not send it, or sends something else, gives zero: unknown. Requests
// that got no answer, or an error, have no worker time the driver can know,
// so their Work stays zero too.
func serviceOf(h []string) time.Duration {
	if len(h) == 0 {
		return 0
	}
	d, err := time.ParseDuration(h[0])
	if err != nil || d < 0 {
		return 0
	}
	return d
}

// sending is a request on its way: its result so far, when its latency
// counts from, and the wall time by which it must end (zero: none).
type sending struct {
	res      workload.Result
	t        *tenant
	from     time.Time
	deadline time.Time
}

// begin starts a request of tenant t on route, intended at model time
// intended, that is being sent at sent, now: it counts it sent and in
// flight, and how late it goes. Paced says the pacer slept for this send
// and should learn how late it was.
func (d *Driver) begin(start time.Time, t *tenant, route int, intended time.Duration, sent time.Time, paced bool) sending {
	s := sending{res: workload.Result{Tenant: t.index, Route: int16(route), Intended: intended}, t: t}
	c := d.counters
	c.sent.Add(1)
	c.inFlight.Add(1)
	// Latency counts from the intended time, so a late send does not hide
	// a slow server, or from the send when the pacer woke early for it, so
	// an early one does not shorten the wait.
	s.from = start.Add(d.scale.Wall(intended))
	late := sent.Sub(s.from)
	s.res.Late = int32(min(max(late/time.Microsecond, math.MinInt32), math.MaxInt32))
	if paced {
		d.pacer.Observe(late)
	}
	if sent.Before(s.from) {
		s.from = sent
	}
	// The client timeout is the connection's deadline, not a context's:
	// no timer and no registration with ctx per request.
	if t.timeout > 0 {
		s.deadline = sent.Add(t.timeout)
	}
	return s
}

// finish ends s, which ended at end with the answer's status, whether it
// carried the limit's mark and its service header (nil: none), or with
// err, and returns its result, or false when ctx's cancellation abandoned
// it.
func (d *Driver) finish(ctx context.Context, s *sending, end time.Time, status int, limited bool, service []string, err error) (workload.Result, bool) {
	c := d.counters
	c.inFlight.Add(-1)
	res := s.res
	took := end.Sub(s.from)
	if err == nil {
		took = max(took-time.Duration(d.tare.Load()), 0)
	}
	res.Latency = d.scale.Model(took)
	switch {
	case err == nil:
		switch {
		case limited:
			res.Outcome = workload.Rejected
		case d.opts.MarkedRejections:
			res.Outcome = workload.Classify(status, nil) // no status is a rejection without the mark
		default:
			res.Outcome = workload.Classify(status, d.reject)
		}
		res.Status = int16(status)
		if res.Outcome == workload.OK {
			res.Work = serviceOf(service)
		}
	case ctx.Err() != nil:
		if !errors.Is(context.Cause(ctx), errDrainExpired) {
			c.abandoned.Add(1)
			return res, false
		}
		res.Outcome = workload.ClientTimeout
	case !s.deadline.IsZero() && (errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded)):
		res.Outcome = workload.ClientTimeout
	default:
		res.Outcome = workload.Error
	}
	return res, true
}

// do sends one request intended at model time intended and returns its
// result, or false when ctx's cancellation abandoned it. Paced is as
// begin's.
func (d *Driver) do(ctx context.Context, start time.Time, t *tenant, client *h1.Client, route int, intended time.Duration, paced bool) (workload.Result, bool) {
	s := d.begin(start, t, route, intended, time.Now(), paced)
	var service []string
	limited := false
	status, err := client.GetBy(ctx, s.deadline, d.uris[route], t.host, func(name, value []byte) {
		header(&service, &limited, name, value)
	})
	return d.finish(ctx, &s, time.Now(), status, limited, service, err)
}

// header takes, from an answer's header field name: value, the ones the
// driver reads: the service header into service, the limit's mark into
// limited.
func header(service *[]string, limited *bool, name, value []byte) {
	switch {
	case bytes.EqualFold(name, serviceHeader):
		*service = []string{string(value)}
	case bytes.EqualFold(name, limitHeader):
		*limited = len(value) > 0
	}
}
