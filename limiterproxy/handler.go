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
	// Clock is the time the Handler reads and waits on: limit_req sees
	// its model time (clock.ModelClock.Instant) and waits out a delay for
	// the delay × Clock.Model.Scale of wall time, on precise timers when
	// Clock.Precise is set. Handlers that share a Policy need one Clock,
	// one clock.NewClock per run, to agree on model time. A Clock with a
	// Scale but no Base is anchored at the Handler's first request. The
	// zero value is real time on the runtime's timers.
	Clock clock.Clock

	// clockOnce settles clk, the Clock the Handler uses, at its first
	// request.
	clockOnce sync.Once
	clk       clock.Clock

	// holders are the requests holding slots whose client can be asked
	// whether it hung up (see gone.go).
	holders holders
}

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
// request whose client goes away during a limit_req delay (r's context is
// done: the server saw it close, or only end its side) never reaches Next
// and never takes a slot: ServeHTTP panics with http.ErrAbortHandler, so
// that the server closes the connection with nothing written, as nginx
// does (a 499).
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
	var a admission
	defer a.end(h)
	rc, _ := r.Context().Value(clientConnKey{}).(syscall.RawConn)
	gone := false
	if !h.admit(&a, w, r, rc, func(c *clock.Clock, until time.Time) bool {
		gone = !c.WaitUntil(r.Context(), until)
		return !gone
	}) {
		if gone {
			// The client went away, or only ended its side (FIN), during
			// the delay: nginx (ngx_http_test_reading, the delay's read
			// handler) ends the request with 499 and closes with nothing
			// written, never contacting the upstream. So does the server,
			// rather than write the empty 200 of a handler that wrote
			// nothing.
			panic(http.ErrAbortHandler)
		}
		return
	}
	h.Next.ServeHTTP(w, r)
}

// admission is one request's pass through the limits, from admit to end.
type admission struct {
	p        *limit.Policy
	ks       *limit.Keys
	connKeys []string
	slots    limit.Slots
	cd       limit.ConnDecision
	holder   *holder  // the slots' holder, when the client can be asked whether it is gone
	connM    *Metrics // counting the request in flight, when not nil
}

// admit applies the limits of r's location (see Policy.For) to r, whose
// client connection is rc (nil when it cannot be asked whether it is
// gone): every limit_req, waiting out a delay with wait (which reports
// false when the client went away), then every limit_conn in order. It
// reports whether r may go on to Next, holding its slots in a until
// a.end; otherwise r is answered already (the rejection, or nothing after
// a delay the client did not wait out). A nil wait is for a location
// whose limit_req cannot delay (CannotDelay).
func (h *Handler) admit(a *admission, w http.ResponseWriter, r *http.Request, rc syscall.RawConn, wait func(c *clock.Clock, until time.Time) bool) bool {
	p := h.Policy
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
	a.p = p
	a.ks = keysPool.Get().(*limit.Keys)
	in := keyInput(r)
	reqKeys, connKeys := a.ks.Eval(p, &in)
	a.connKeys = connKeys

	if len(p.Req) > 0 {
		c := h.clock()
		start := c.Now()
		rd := p.ReqStage(c.Model.Instant(start), reqKeys)
		reqM.countReq(reqKeys, rd)
		switch rd.Verdict {
		case limit.Rejected:
			reject(w, p.Req[rd.Rule].Name, p.Req[rd.Rule].Key.String(), rd.Status)
			return false
		case limit.RejectedDryRun:
			w.Header().Add(DryRunHeader, p.Req[rd.Rule].Name+" "+p.Req[rd.Rule].Key.String())
		}
		// A client that went away during the delay is answered nothing.
		if rd.Delay > 0 && (wait == nil || !wait(c, start.Add(c.Wall(rd.Delay)))) {
			return false
		}
	}

	// A request whose client can be asked whether it is gone takes its
	// slots and registers as their holder under its keys' shards of the
	// holders, as releases free slots and unregister under them: a reap
	// finds every slot of its key beside its holder (see gone.go).
	var set shardSet
	if rc != nil {
		set = h.holders.shardsOf(connKeys)
		h.holders.lock(set)
	}
	slots, cd := p.ConnStage(connKeys)
	if cd.Verdict == limit.Rejected || cd.Verdict == limit.RejectedDryRun {
		var freed bool
		if rc != nil {
			freed = h.holders.reapLocked(cd.Rule, connKeys[cd.Rule])
		} else {
			freed = h.holders.reap(cd.Rule, connKeys[cd.Rule])
		}
		if freed {
			// A holder's client had hung up before this request came:
			// nginx would have freed its slot first. Give back what this
			// pass took (the enforced limits' slots beside a dry-run
			// rejection) and take them again.
			slots.Release()
			slots, cd = p.ConnStage(connKeys)
		}
	}
	a.slots, a.cd = slots, cd
	if rc != nil {
		if slots.Len() > 0 {
			a.holder = h.holders.holdLocked(slots, connKeys, rc)
		}
		h.holders.unlock(set)
	}
	switch cd.Verdict {
	case limit.Rejected:
		connM.connVerdict(cd.Rule, limit.Rejected)
		reject(w, p.Conn[cd.Rule].Name, p.Conn[cd.Rule].Key.String(), cd.Status)
		return false
	case limit.RejectedDryRun:
		w.Header().Add(DryRunHeader, p.Conn[cd.Rule].Name+" "+p.Conn[cd.Rule].Key.String())
	}
	if connM != nil && len(connKeys) > 0 {
		connM.connAdmitted(p, connKeys, cd, 1)
		a.connM = connM
	}
	return true
}

// end releases what admit took: the request leaves the in-flight count,
// its slots are freed (unless reap freed them), its keys' space goes
// back. It is safe on an admission admit never ran on, and does nothing
// the second time.
func (a *admission) end(h *Handler) {
	if a.connM != nil {
		a.connM.connAdmitted(a.p, a.connKeys, a.cd, -1)
		a.connM = nil
	}
	if a.holder != nil {
		h.holders.release(a.holder)
		a.holder = nil
	} else {
		a.slots.Release()
	}
	a.slots = limit.Slots{}
	if a.ks != nil {
		putKeys(a.ks)
		a.ks = nil
	}
	a.connKeys = nil
}

// CannotDelay reports whether no limit_req of p can delay a request: each
// is nodelay, has no burst to delay within, or delays none of its burst.
func CannotDelay(p *limit.Policy) bool {
	for _, r := range p.Req {
		if !r.Spec.NoDelay && r.Spec.Burst > 0 && r.Spec.Delay < r.Spec.Burst {
			return false
		}
	}
	return true
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

// clock returns the Handler's Clock, settled at its first request: one
// with a Scale but no Base is anchored then.
func (h *Handler) clock() *clock.Clock {
	h.clockOnce.Do(func() {
		c := h.Clock
		if s := c.Model.Scale; s != 0 && s != 1 && c.Model.Base.IsZero() {
			c = clock.NewClock(s, c.Precise)
		}
		h.clk = c
	})
	return &h.clk
}

// reject answers a request a limit turned away. After some statuses
// nginx never keeps the connection (ngx_http_special_response_handler:
// 400, 413, 414, 500, 501), and neither does reject: a client that reuses
// its connections opens a new one after them, as at nginx.
func reject(w http.ResponseWriter, rule, key string, status int) {
	if status == 0 {
		status = limit.DefaultStatus
	}
	hdr := w.Header()
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusRequestURITooLong,
		http.StatusInternalServerError, http.StatusNotImplemented:
		hdr.Set("Connection", "close")
	}
	hdr.Set(LimitHeader, rule+" "+key)
	hdr.Set("Content-Type", "text/plain; charset=utf-8")
	hdr.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	io.WriteString(w, strconv.Itoa(status)+" "+http.StatusText(status)+": "+rule+" "+key+"\n") //nolint:errcheck // the client may be gone
}
