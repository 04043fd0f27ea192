package limiterproxy

import (
	"io"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"stampede/clock"
	"stampede/limit"
)

// Response headers the Handler sets. LimitHeader names the limit that
// rejected a request; DryRunHeader each limit in dry-run mode that would
// have. Values are the limit and its key, "limit_conn[0] $host".
const (
	LimitHeader  = "X-Stampede-Limit"
	DryRunHeader = "X-Stampede-Dry-Run"
)

// Handler applies a Policy in front of Next: limit_req first (a delay waits
// on the request's context), then every limit_conn in order, releasing on
// every path (response, client gone, upstream error, panic).
type Handler struct {
	Policy *limit.Policy
	// Next serves admitted requests, usually the reverse proxy.
	Next http.Handler
	// Metrics, when not nil, counts decisions per limit.
	Metrics *Metrics
	// TimeScale plays model time faster than real time: limit_req sees
	// model time (wall time ÷ TimeScale) and its delays are waited for
	// TimeScale times as long. Zero means 1, real time.
	TimeScale float64
	// PreciseTimers times limit_req delays within about 0.1 ms rather than
	// the runtime timer's millisecond (see package clock); a time-scaled
	// run wants it. False uses the runtime's timers alone.
	PreciseTimers bool

	// holders are the requests holding slots whose client can be asked
	// whether it hung up (see gone.go).
	holders holders
}

// epoch anchors model time for a Handler with a TimeScale: every Handler in
// the process measures model time from the same instant, so handlers that
// share a Policy agree on it.
var epoch = time.Now()

// keysPool holds the key evaluation space of requests in progress.
var keysPool = sync.Pool{New: func() any { return new(limit.Keys) }}

// ServeHTTP applies the Policy to r, the limits of r's location (see
// Policy.For): every limit_req (waiting out a delay on r's context), then
// every limit_conn in order, then Next with the limit_conn slots held until
// Next returns or panics. Before it rejects a request for a key, it frees
// the slots of that key's holders whose clients have already hung up (see
// gone.go), as nginx would have; that needs the server's ConnContext hook,
// which NewServer sets. A rejected request is
// answered with the limit's status, a short text body and LimitHeader. A
// request whose client goes away during a limit_req delay is answered with
// nothing and never takes a slot.
//
// A request whose Host nginx would refuse is answered 400. A nil Policy
// limits nothing. Next must not be nil. ServeHTTP is safe for
// concurrent use.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Host != "" && !limit.ValidHost(r.Host) {
		// nginx refuses such a request before any limit sees it.
		http.Error(w, "400 Bad Request: invalid host", http.StatusBadRequest)
		return
	}
	p := h.Policy
	if p == nil {
		h.Next.ServeHTTP(w, r)
		return
	}
	reqM, connM := h.Metrics, h.Metrics
	if len(p.Locations) > 0 && r.URL != nil {
		if loc := p.For(r.URL.Path); loc != p {
			// The metrics are the server's limits'; a location's own are
			// not among them, the server's it inherits are.
			if !sameRules(loc.Req, p.Req) {
				reqM = nil
			}
			if !sameRules(loc.Conn, p.Conn) {
				connM = nil
			}
			p = loc
		}
	}
	ks := keysPool.Get().(*limit.Keys)
	defer putKeys(ks)
	in := keyInput(r)
	reqKeys, connKeys := ks.Eval(p, &in)

	if len(p.Req) > 0 {
		start := time.Now()
		rd := p.ReqStage(h.modelTime(start), reqKeys)
		reqM.countReq(reqKeys, rd)
		switch rd.Verdict {
		case limit.Rejected:
			reject(w, p.Req[rd.Rule].Name, p.Req[rd.Rule].Key.String(), rd.Status)
			return
		case limit.RejectedDryRun:
			w.Header().Add(DryRunHeader, p.Req[rd.Rule].Name+" "+p.Req[rd.Rule].Key.String())
		}
		if rd.Delay > 0 && !h.wait(r, rd.Delay, start) {
			return
		}
	}

	slots, cd := p.ConnStage(connKeys)
	if (cd.Verdict == limit.Rejected || cd.Verdict == limit.RejectedDryRun) && h.holders.reap(cd.Rule, connKeys[cd.Rule]) {
		// A holder's client had hung up before this request came: nginx
		// would have freed its slot first. Give back what this pass took
		// (the enforced limits' slots beside a dry-run rejection) and
		// take them again.
		slots.Release()
		slots, cd = p.ConnStage(connKeys)
	}
	if rc, ok := r.Context().Value(clientConnKey{}).(syscall.RawConn); ok && slots.Len() > 0 {
		defer h.holders.release(h.holders.hold(slots, connKeys, rc))
	} else {
		defer slots.Release()
	}
	switch cd.Verdict {
	case limit.Rejected:
		connM.connVerdict(cd.Rule, limit.Rejected)
		reject(w, p.Conn[cd.Rule].Name, p.Conn[cd.Rule].Key.String(), cd.Status)
		return
	case limit.RejectedDryRun:
		w.Header().Add(DryRunHeader, p.Conn[cd.Rule].Name+" "+p.Conn[cd.Rule].Key.String())
	}
	if connM != nil && len(connKeys) > 0 {
		connM.connAdmitted(p, connKeys, cd, 1)
		defer connM.connAdmitted(p, connKeys, cd, -1)
	}
	h.Next.ServeHTTP(w, r)
}

// sameRules reports whether a and b are the same rules, not copies: a
// location's inherited ones.
func sameRules[R any](a, b []R) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func putKeys(ks *limit.Keys) {
	ks.Clear()
	keysPool.Put(ks)
}

// scale is the Handler's TimeScale; a negative one is taken as 1.
func (h *Handler) scale() clock.Scale { return clock.Scale(max(h.TimeScale, 0)) }

// modelTime is the time limit_req sees for a request arriving at the wall
// time now: with a TimeScale, model time since epoch.
func (h *Handler) modelTime(now time.Time) time.Time {
	if s := h.scale(); s != 0 && s != 1 {
		return epoch.Add(s.Model(now.Sub(epoch)))
	}
	return now
}

// wait holds r for the model delay d counted from start, and reports
// whether it should go on: false if the client went away first.
func (h *Handler) wait(r *http.Request, d time.Duration, start time.Time) bool {
	wall := h.scale().Wall(d)
	if wall <= time.Since(start) {
		return r.Context().Err() == nil
	}
	return clock.Wait(r.Context(), start.Add(wall), h.PreciseTimers)
}

// reject answers a request a limit turned away.
func reject(w http.ResponseWriter, rule, key string, status int) {
	if status == 0 {
		status = limit.DefaultStatus
	}
	hdr := w.Header()
	hdr.Set(LimitHeader, rule+" "+key)
	hdr.Set("Content-Type", "text/plain; charset=utf-8")
	hdr.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	io.WriteString(w, strconv.Itoa(status)+" "+http.StatusText(status)+": "+rule+" "+key+"\n") //nolint:errcheck // the client may be gone
}
