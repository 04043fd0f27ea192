package scenarios

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// slo reads the objectives, group → list of "METRIC OP VALUE". "all" gives
// the objectives to every group. They come out in the order of the groups.
func (d *decoder) slo(n *yaml.Node) []SLO {
	const path = "slo"
	if !d.is(n, path, yaml.MappingNode, "a mapping of group to objectives", `{other-sites: ["p99 < 1s", "ok_rate > 99%"]}`) {
		return nil
	}
	f := d.mapping(n, path, `{other-sites: ["p99 < 1s"]}`, nil)
	if f == nil {
		return nil
	}
	var out []SLO
	for _, group := range f.order {
		kn, v := f.keys[group], f.vals[group]
		gp := join(path, group)
		if d.tenantOK && group != "all" && !slices.Contains(d.groups, group) {
			d.fail(kn, path, nil, "no tenant group %q%s (known: %s, or all)", group, suggest(group, d.groups), strings.Join(d.groups, ", "))
			continue
		}
		if v == nil {
			continue
		}
		var items []element
		switch v.Kind {
		case yaml.ScalarNode:
			items = []element{{node: v, path: gp}}
		case yaml.SequenceNode:
			for i, e := range v.Content {
				if r := d.resolve(e); r != nil {
					items = append(items, element{node: r, path: index(gp, i), i: i})
				}
			}
		default:
			d.fail(v, gp, nil, "%s is not a list of objectives (want e.g. [\"p99 < 1s\", \"ok_rate > 99%%\"])", describe(v))
			continue
		}
		for _, it := range items {
			text, ok := d.scalar(it.node, it.path, `"p99 < 1s"`)
			if !ok {
				continue
			}
			o, err := parseSLO(text)
			if err != nil {
				d.fail(it.node, it.path, err, "%v (want e.g. \"p99 < 1s\" or \"ok_rate > 99%%\")", err)
				continue
			}
			targets := []string{group}
			if group == "all" {
				targets = d.groups
			}
			for _, g := range targets {
				o.Group = g
				out = append(out, o)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b SLO) int {
		return slices.Index(d.groups, a.Group) - slices.Index(d.groups, b.Group)
	})
	return out
}
