package scenarios

import (
	"slices"

	"go.yaml.in/yaml/v3"
)

// Recommend is the objective of compare's recommendation, the file's
// recommend: block. The zero value protects every group that has an SLO and
// prefers, among the points where those SLOs pass, the one with the widest
// margin to a failing point.
type Recommend struct {
	// Protect is the group whose SLOs a recommended point must pass; ""
	// means every group that has an SLO.
	Protect string
	// Prefer chooses among the points that protect it: PreferMargin (""),
	// PreferStrictest (the lowest limit) or PreferLoosest (the highest;
	// off is the loosest of all).
	Prefer string
}

// The values of Recommend.Prefer.
const (
	PreferMargin    = ""
	PreferStrictest = "strictest"
	PreferLoosest   = "loosest"
)

var recommendKeys = []string{"protect", "prefer"}

// recommend reads the recommend: block; groups are the file's tenant
// groups, which protect must name.
func (d *decoder) recommend(n *yaml.Node, groups []string) Recommend {
	const path = "recommend"
	const example = "{protect: other-sites, prefer: strictest}"
	var r Recommend
	f := d.mapping(d.resolve(n), path, example, recommendKeys)
	if f == nil {
		return r
	}
	if f.str("protect", "other-sites", &r.Protect) && !slices.Contains(groups, r.Protect) {
		d.fail(f.at("protect"), join(path, "protect"), nil, "%q is not a tenant group%s (want one of the groups, e.g. %s)", r.Protect, suggest(r.Protect, groups), firstOr(groups, "other-sites"))
	}
	if f.str("prefer", "strictest", &r.Prefer) {
		switch r.Prefer {
		case PreferStrictest, PreferLoosest:
		case "margin":
			r.Prefer = PreferMargin
		default:
			d.fail(f.at("prefer"), join(path, "prefer"), nil, "%q is not a preference%s (want strictest, loosest or margin)", r.Prefer, suggest(r.Prefer, []string{"strictest", "loosest", "margin"}))
		}
	}
	return r
}

func firstOr(s []string, or string) string {
	if len(s) > 0 {
		return s[0]
	}
	return or
}

// recommendNode writes r back, nil for the zero value.
func recommendNode(r Recommend) *yaml.Node {
	if r == (Recommend{}) {
		return nil
	}
	var kvs []pair
	if r.Protect != "" {
		kvs = append(kvs, kv("protect", strNode(r.Protect)))
	}
	if r.Prefer != "" {
		kvs = append(kvs, kv("prefer", strNode(r.Prefer)))
	}
	return mapNode(true, kvs...)
}
