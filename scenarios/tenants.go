package scenarios

import (
	"time"

	"go.yaml.in/yaml/v3"
)

// This file reads the tenants section: groups, counts and their hosts
// and addresses.

func (d *decoder) tenants(n *yaml.Node, duration time.Duration) []TenantGroup {
	const path = "tenants"
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		d.fail(n, path, nil, "want a list of at least one tenant group (want e.g. [{group: sites, count: 10, host: site{i}.example.com, load: {rate: 1/s}}])")
		return nil
	}
	var out []TenantGroup
	total := 0
	seen := map[string]int{}
	list, complete := d.entries(n, path, "tenant group", "{group: sites, count: 10, host: site{i}.example.com, load: {rate: 1/s}}")
	d.tenantOK = complete
	for _, e := range list {
		i, ep, r := e.i, e.path, e.node
		g, gn, ok := d.tenant(r, ep, duration)
		if !ok {
			d.tenantOK = false
		}
		if g.Group != "" {
			if j, dup := seen[g.Group]; dup {
				d.fail(gn, join(ep, "group"), nil, "group %q is already tenants[%d]; group names must differ", g.Group, j)
				d.tenantOK = false
			}
			seen[g.Group] = i
			d.groups = append(d.groups, g.Group)
		}
		total += g.Count
		if total > maxTenants {
			d.fail(r, join(ep, "count"), nil, "more than %d tenants in all", maxTenants)
			return out
		}
		out = append(out, g)
	}
	return out
}

// tenant reads one tenant group; it returns the node of its group name.
func (d *decoder) tenant(n *yaml.Node, path string, duration time.Duration) (TenantGroup, *yaml.Node, bool) {
	g := TenantGroup{Count: 1, Addr: DefaultAddr}
	f := d.mapping(n, path, "{group: sites, count: 10, host: site{i}.example.com, load: {rate: 1/s}}", tenantKeys)
	if f == nil {
		return g, n, false
	}
	ok := true
	if f.str("group", "other-sites", &g.Group) {
		if g.Group == "all" {
			d.fail(f.at("group"), join(path, "group"), nil, `"all" is reserved for SLOs over every group (want e.g. other-sites)`)
			ok = false
		} else if !d.name(f.at("group"), join(path, "group"), g.Group, "other-sites") {
			ok = false
		}
	} else {
		f.missing("group", "other-sites")
		ok = false
	}
	f.integer("count", "249", 1, maxTenants, &g.Count)
	if f.has("hosts") {
		d.hostList(f, path, &g)
	} else if f.str("host", "site{i}.example.com", &g.Host) {
		d.hostTemplate(f.at("host"), join(path, "host"), g.Host, g.Count)
	} else {
		f.missing("host", "site{i}.example.com")
	}
	if f.str("addr", "127.0.0.9", &g.Addr) {
		d.addrTemplate(f.at("addr"), join(path, "addr"), g.Addr, g.Count)
	}
	if f.str("addrs", "127.1.0.0/24", &g.Addrs) {
		d.addrPool(f.at("addrs"), join(path, "addrs"), g.Addrs, g.Count)
	}
	if ln := f.get("load"); ln != nil {
		d.load(ln, join(path, "load"), duration, &g.Load)
	} else {
		f.missing("load", "{model: open, rate: 1/s}")
	}
	return g, f.at("group"), ok
}
