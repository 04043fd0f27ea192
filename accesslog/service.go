package accesslog

import (
	"bytes"
	"fmt"
	"time"
)

// occupy adds a request at the backend from end-d to end (ms since base)
// to the per-second mean of requests there.
func (im *importer) occupy(end, d int64) {
	start := max(end-d, 0)
	if end < 0 {
		return
	}
	last := end / 1000
	if last >= int64(len(im.inflight)) {
		if last > 60*86400 {
			return
		}
		im.inflight = append(im.inflight, make([]float32, last+1-int64(len(im.inflight)))...)
	}
	for s := start / 1000; s <= last; s++ {
		lo, hi := max(start, s*1000), min(end, s*1000+1000)
		if hi > lo {
			im.inflight[s] += float32(hi-lo) / 1000
		}
	}
}

// gunicornEntry takes one request of a gunicorn log: its worker time.
func (im *importer) gunicornEntry(e *Entry) error {
	if e.Path == nil || e.RequestTime < 0 || bytes.HasPrefix(e.Path, stampedePaths) {
		return nil
	}
	if e.End != 0 && !im.inWindow(e.End-int64(e.RequestTime)) {
		return nil
	}
	rid := im.route(e.Path)
	im.sample(rid, uint64(e.RequestTime/time.Microsecond))
	if e.Host != nil && im.sum.TenantKey == "$host" {
		if tid, ok := im.tenantIDs[string(e.Host)]; ok {
			im.work[tid] += float64(e.RequestTime / time.Microsecond)
			im.workExact = true
		}
	}
	return nil
}

func (im *importer) sample(rid uint32, us uint64) {
	for int(rid) >= len(im.svc) {
		im.svc = append(im.svc, nil)
	}
	if im.svc[rid] == nil {
		im.svc[rid] = &hist{}
	}
	im.svc[rid].add(us)
}

// nginxService takes the service times from nginx's upstream times, of the
// requests that were at the backend only while fewer requests than workers
// were: then none waited in the backlog, whose wait the upstream time
// would include.
func (im *importer) nginxService() {
	workers := float32(im.workers())
	var kept, total int64
	for i, tk := range im.ticks {
		up := im.ups[i]
		if up == noSample {
			continue
		}
		total++
		if im.calm(tk, up, workers) {
			im.sample(uint32(tk&(1<<routeBits-1)), uint64(up))
			kept++
		}
	}
	// A route that only ran while the pool was saturated gets all its
	// samples, and a note.
	seen := make([]bool, len(im.routes)+1)
	for i, tk := range im.ticks {
		rid := uint32(tk & (1<<routeBits - 1))
		if im.ups[i] == noSample || int(rid) < len(im.svc) && im.svc[rid] != nil && !seen[rid] {
			continue
		}
		seen[rid] = true
		im.sample(rid, uint64(im.ups[i]))
	}
	for rid, s := range seen {
		if s {
			im.sum.Notes = append(im.sum.Notes, fmt.Sprintf("route %s ran only while the pool was saturated: its service times include backlog waits", im.routeName(uint32(rid))))
		}
	}
	what := "nginx's upstream times"
	if !im.opts.Format.Has("upstream_time") {
		what = "nginx's $request_time (the format has no $upstream_response_time, so the clients' own time is in it)"
	}
	im.sum.ServiceFrom = fmt.Sprintf("%s while the pool was not saturated (%d of %d requests; pass --gunicorn-log for the workers' own times)", what, kept, total)
}

// calm reports whether a request (its key and upstream µs) was at the
// backend only in seconds when fewer requests than workers were.
func (im *importer) calm(tk uint64, up uint32, workers float32) bool {
	startMs := int64(tk >> 32)
	endMs := startMs + int64(up)/1000
	for s := startMs / 1000; s <= endMs/1000 && s < int64(len(im.inflight)); s++ {
		if im.inflight[s] >= workers {
			return false
		}
	}
	return true
}
