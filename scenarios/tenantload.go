package scenarios

import (
	"math"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"stampede/workerpool"
)

// This file reads a tenant group's load: open arrivals and their stages,
// closed-model users, and the mix of routes.

// traceExcluded are the keys a trace load may not have.
var traceExcluded = slices.Concat(closedKeys, []string{"arrivals", "rate", "stages"})

func (d *decoder) load(n *yaml.Node, path string, duration time.Duration, l *Load) {
	f := d.mapping(n, path, "{model: open, rate: 1/s}", loadKeys)
	if f == nil {
		return
	}
	if !choice(f, "model", "", &l.Model, Open, Closed, Traced) {
		return
	}
	other, otherName, thisName := closedKeys, "closed", "open"
	if l.Model == Closed {
		other, otherName, thisName = openKeys, "open", "closed"
	}
	if l.Model == Traced {
		other, otherName, thisName = traceExcluded, "open or closed", "trace"
	}
	for _, k := range other {
		if _, ok := f.keys[k]; ok {
			d.fail(f.keys[k], path, nil, "%s is for the %s model and this load is %s (want model: %s, or leave out %s)", k, otherName, thisName, otherName, k)
		}
	}
	switch l.Model {
	case Open:
		d.openLoad(f, path, l)
	case Closed:
		d.closedLoad(f, path, l)
	case Traced:
		f.integer("max_in_flight", "100", 0, math.MaxInt32, &l.MaxInFlight)
	}
	f.duration("start", "1m", &l.Start)
	f.duration("stop", "9m", &l.Stop)
	if duration > 0 {
		if l.Start >= duration {
			d.fail(f.at("start"), join(path, "start"), nil, "%s is not before the end of the run at %s", workerpool.FormatDuration(l.Start), workerpool.FormatDuration(duration))
		}
		if l.Stop > duration {
			d.fail(f.at("stop"), join(path, "stop"), nil, "%s is after the end of the run at %s (want e.g. %s, or leave it out)", workerpool.FormatDuration(l.Stop), workerpool.FormatDuration(duration), workerpool.FormatDuration(duration))
		}
	}
	if l.Stop != 0 && l.Stop <= l.Start {
		d.fail(f.at("stop"), join(path, "stop"), nil, "%s is not after start %s", workerpool.FormatDuration(l.Stop), workerpool.FormatDuration(l.Start))
	}
	f.duration("client_timeout", "2m", &l.ClientTimeout)
	d.mix(f, path, l)
}

func (d *decoder) openLoad(f *fields, path string, l *Load) {
	choice(f, "arrivals", "", &l.Arrivals, Poisson, Constant)
	hasRate := f.rate("rate", "5/s", &l.Rate)
	if sn := f.get("stages"); sn != nil {
		if f.has("rate") {
			d.fail(f.keys["rate"], path, nil, "rate and stages exclude each other (want stages: [{duration: 1m, rate: 5/s}, ...] alone)")
		}
		d.stages(sn, join(path, "stages"), l)
	} else if !f.has("rate") {
		f.missing("rate", "5/s")
	} else if hasRate && l.Rate == 0 {
		d.fail(f.at("rate"), join(path, "rate"), nil, "an open load needs a rate above 0 (want e.g. 5/s)")
	}
	f.integer("max_in_flight", "100", 0, math.MaxInt32, &l.MaxInFlight)
}

func (d *decoder) stages(n *yaml.Node, path string, l *Load) {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		d.fail(n, path, nil, "want a list of at least one stage (want e.g. [{duration: 1m, rate: 5/s}])")
		return
	}
	total := 0.0
	errs := len(d.errs)
	for f := range d.mappings(n, path, "stage", "{duration: 1m, rate: 5/s}", stageKeys) {
		ep := f.path
		var st Stage
		if !f.duration("duration", "1m", &st.Duration) {
			if !f.has("duration") {
				f.missing("duration", "1m")
			}
		} else if st.Duration == 0 {
			d.fail(f.at("duration"), join(ep, "duration"), nil, "must be above 0 (want e.g. 1m)")
		}
		if !f.rate("rate", "5/s", &st.Rate) && !f.has("rate") {
			f.missing("rate", "5/s")
		}
		total += st.Rate
		l.Stages = append(l.Stages, st)
	}
	if total == 0 && len(d.errs) == errs {
		d.fail(n, path, nil, "every stage has rate 0; an open load needs a rate above 0 somewhere (want e.g. rate: 5/s)")
	}
}

func (d *decoder) closedLoad(f *fields, path string, l *Load) {
	if !f.integer("users", "8", 1, maxUsers, &l.Users) && !f.has("users") {
		f.missing("users", "8")
	}
	f.duration("think", "5s", &l.Think)
	f.integer("iterations", "1", 0, math.MaxInt32, &l.Iterations)
	choice(f, "on_timeout", ", a browser tab refreshed after a timeout", &l.OnTimeout, Retry, GiveUp)
}

// mix reads a load's routes: route name → weight.
func (d *decoder) mix(f *fields, path string, l *Load) {
	rn := f.get("routes")
	path = join(path, "routes")
	if rn == nil {
		switch {
		case d.routes == nil:
		case len(d.routes) == 1:
			l.Routes = []WeightedRoute{{Route: 0, Weight: 1}}
		default:
			d.fail(f.at("routes"), path, nil, "missing: the backend has several routes (want e.g. routes: {%s: 1})", d.routes[0])
		}
		return
	}
	example := "{page: 1}"
	if len(d.routes) > 0 {
		example = "{" + d.routes[0] + ": 1}"
	}
	rf := d.mapping(rn, path, example, nil)
	if rf == nil {
		return
	}
	if len(rf.order) == 0 {
		d.fail(rn, path, nil, "no routes (want e.g. %s)", example)
	}
	for _, name := range rf.order {
		kn, v := rf.keys[name], rf.vals[name]
		if v == nil {
			d.fail(kn, join(path, name), nil, "no weight (want e.g. %s: 1)", name)
			continue
		}
		w, ok := d.number(v, join(path, name), "1")
		if !ok {
			continue
		}
		if w <= 0 {
			d.fail(v, join(path, name), nil, "weight %s is not above 0 (want e.g. 1)", v.Value)
			continue
		}
		if d.routes == nil {
			continue
		}
		i := slices.Index(d.routes, name)
		if i < 0 {
			d.fail(kn, path, nil, "no route %q in backend.routes%s (known: %s)", name, suggest(name, d.routes), strings.Join(d.routes, ", "))
			continue
		}
		l.Routes = append(l.Routes, WeightedRoute{Route: i, Weight: w})
	}
}
