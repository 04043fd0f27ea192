package scenarios

import (
	"math"
	"strings"

	"go.yaml.in/yaml/v3"

	"stampede/workerpool"
)

// This file reads the backend section: gunicorn's workers and its routes.

// backend reads the backend section into b, from the defaults of a file
// that leaves fields out, and holds it to the pool's own bounds.
func (d *decoder) backend(n *yaml.Node, b *Backend) {
	const path = "backend"
	f := d.mapping(n, path, "{workers: 8, routes: [...]}", backendKeys)
	b.Workers, b.Backlog = workerpool.DefaultWorkers, workerpool.DefaultBacklog
	b.Threads, b.Boot = 1, workerpool.DefaultBoot
	if f == nil {
		return
	}
	d.gunicorn(f, path, b)
	f.integer("workers", backendExamples["workers"], 1, math.MaxInt, &b.Workers)
	if f.integer("backlog", backendExamples["backlog"], 0, math.MaxInt, &b.Backlog) && b.Backlog == 0 {
		b.Backlog = -1 // workerpool.Config: negative means none may wait
	}
	f.duration("timeout", backendExamples["timeout"], &b.Timeout)
	choice(f, "on_client_abort", ", as a gunicorn sync worker", &b.OnClientAbort, workerpool.Continue, workerpool.Cancel)
	d.poolBounds(f, path, b)
	rn := f.get("routes")
	if rn == nil && d.routesOptional {
		return
	}
	if rn == nil {
		f.missing("routes", "[{name: page, path: /, service: 30ms}]")
		return
	}
	rpath := join(path, "routes")
	if rn.Kind != yaml.SequenceNode || len(rn.Content) == 0 {
		d.fail(rn, rpath, nil, "want a list of at least one route (want e.g. [{name: page, path: /, service: 30ms}])")
		return
	}
	names := map[string]bool{}
	paths := map[string]bool{}
	list, ok := d.entries(rn, rpath, "route", "{name: page, path: /, service: 30ms}")
	for _, e := range list {
		r, rok := d.route(e.node, e.path, names, paths)
		ok = ok && rok
		b.Routes = append(b.Routes, r)
	}
	if ok {
		for _, r := range b.Routes {
			d.routes = append(d.routes, r.Name)
		}
	}
}

// route reads one route; names and paths are those of the routes before it.
func (d *decoder) route(n *yaml.Node, path string, names, paths map[string]bool) (Route, bool) {
	var r Route
	f := d.mapping(n, path, "{name: page, path: /app, service: 30ms}", routeKeys)
	if f == nil {
		return r, false
	}
	ok := true
	if f.str("name", "page", &r.Name) {
		if !d.name(f.at("name"), join(path, "name"), r.Name, "page") {
			ok = false
		} else if names[r.Name] {
			d.fail(f.at("name"), join(path, "name"), nil, "route %q is named twice", r.Name)
			ok = false
		}
		names[r.Name] = true
	} else {
		f.missing("name", "page")
		ok = false
	}
	if f.str("path", "/app", &r.Path) {
		switch err := workerpool.CheckPath(r.Path); {
		case err != nil:
			d.fail(f.at("path"), join(path, "path"), err, "%v", err)
		case paths[r.Path]:
			d.fail(f.at("path"), join(path, "path"), nil, "path %q belongs to an earlier route", r.Path)
		}
		paths[r.Path] = true
	} else {
		f.missing("path", "/app")
	}
	var svc string
	if f.str("service", `"lognormal:median=30ms,p99=200ms"`, &svc) {
		dist, err := workerpool.ParseDist(svc)
		if err != nil {
			d.fail(f.at("service"), join(path, "service"), err, "%s", strings.TrimPrefix(err.Error(), workerpool.ErrDist.Error()+" "))
		}
		r.Service = dist
	} else {
		f.missing("service", `"lognormal:median=30ms,p99=200ms"`)
	}
	return r, ok
}

// gunicorn reads the backend's fields that model gunicorn beyond its
// workers: threads, boot, max_requests and the kernel's backlog overflow.
func (d *decoder) gunicorn(f *fields, path string, b *Backend) {
	f.integer("threads", backendExamples["threads"], 1, math.MaxInt, &b.Threads)
	f.duration("boot", backendExamples["boot"], &b.Boot)
	f.integer("max_requests", backendExamples["max_requests"], 0, math.MaxInt, &b.MaxRequests)
	f.integer("max_requests_jitter", backendExamples["max_requests_jitter"], 0, math.MaxInt, &b.MaxRequestsJitter)
	choice(f, "backlog_overflow", ", Linux's default tcp_abort_on_overflow=0", &b.Overflow, workerpool.Drop, workerpool.Reset)
}

// backendExamples are a good value of each backend field the pool's
// Config bounds, keyed as workerpool.FieldError names them.
var backendExamples = map[string]string{
	"workers": "8", "threads": "4", "backlog": "2048", "timeout": "120s", "boot": "300ms",
	"max_requests": "5000", "max_requests_jitter": "500", "on_client_abort": "continue", "backlog_overflow": "drop",
}

// poolBounds holds the backend read so far against the pool's own bounds
// (workerpool.Config.Validate), blaming the field each one names.
func (d *decoder) poolBounds(f *fields, path string, b *Backend) {
	for _, fe := range workerpool.FieldErrors(b.PoolConfig().Validate()) {
		d.fail(f.at(fe.Field), join(path, fe.Field), fe, "%s (want e.g. %s)", fe.Msg, backendExamples[fe.Field])
	}
}
