package scenarios

import (
	"slices"

	"go.yaml.in/yaml/v3"
)

// sweep reads the sweep section: the axes a compare plays, each a --set
// path and its values, checked against the file by checkSweep.
func (d *decoder) sweep(n *yaml.Node) []Axis {
	const path = "sweep"
	if !d.is(n, path, yaml.SequenceNode, "a list of axes", "[{path: proxy.limit_conn.per_key, values: [off, 2, 4]}]") {
		return nil
	}
	if len(n.Content) > maxAxes {
		d.fail(n, path, nil, "%d axes; at most %d", len(n.Content), maxAxes)
		return nil
	}
	var out []Axis
	for f := range d.mappings(n, path, "axis", "{path: proxy.limit_conn.per_key, values: [off, 2, 4]}", axisKeys) {
		ep := f.path
		var a Axis
		var nodes []*yaml.Node
		if f.str("path", "proxy.limit_conn.per_key", &a.Path) {
			if err := checkSetPath(a.Path); err != nil {
				d.fail(f.at("path"), join(ep, "path"), err, "%v (want e.g. proxy.limit_conn.per_key)", err)
			}
			for _, b := range out {
				if b.Path == a.Path {
					d.fail(f.at("path"), join(ep, "path"), nil, "%q is swept twice", a.Path)
				}
			}
		} else {
			f.missing("path", "proxy.limit_conn.per_key")
		}
		vn := f.get("values")
		switch {
		case vn == nil:
			f.missing("values", "[off, 2, 4]")
		case vn.Kind != yaml.SequenceNode || len(vn.Content) == 0:
			d.fail(vn, join(ep, "values"), nil, "want a list of at least one value (want e.g. [off, 2, 4])")
		case len(vn.Content) > maxAxisSize:
			d.fail(vn, join(ep, "values"), nil, "%d values; at most %d", len(vn.Content), maxAxisSize)
		default:
			for j, e := range vn.Content {
				r := d.resolve(e)
				if r == nil {
					d.fail(e, index(join(ep, "values"), j), nil, "an empty value")
					continue
				}
				if v, ok := d.scalar(r, index(join(ep, "values"), j), "4"); ok {
					if slices.Contains(a.Values, v) {
						d.fail(r, index(join(ep, "values"), j), nil, "%s is already a value of this axis: each point is played once", v)
						continue
					}
					a.Values = append(a.Values, v)
					nodes = append(nodes, r)
				}
			}
		}
		out = append(out, a)
		d.sweepValues = append(d.sweepValues, nodes)
	}
	return out
}
