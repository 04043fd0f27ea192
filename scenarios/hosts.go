package scenarios

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// hostList reads a tenant group's hosts: a list of Host headers, one per
// tenant, for a group whose hosts follow no template (stampede import
// writes them). It excludes host; count, when given, must equal its length.
func (d *decoder) hostList(f *fields, path string, g *TenantGroup) {
	n := f.get("hosts")
	hp := join(path, "hosts")
	if f.has("host") {
		d.fail(f.keys["host"], path, nil, "host and hosts exclude each other (want hosts: [a.example.com, b.example.com] alone)")
	}
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		d.fail(n, hp, nil, "want a list of at least one host (want e.g. [a.example.com, b.example.com])")
		return
	}
	if len(n.Content) > maxTenants {
		d.fail(n, hp, nil, "more than %d hosts", maxTenants)
		return
	}
	seen := map[string]int{}
	for i, hn := range n.Content {
		ep := index(hp, i)
		h, ok := d.scalar(hn, ep, "a.example.com")
		if !ok {
			continue
		}
		if why := badHost(h); why != "" {
			d.fail(hn, ep, nil, "host %q %s (want e.g. a.example.com)", h, why)
			continue
		}
		if first(d, hn, ep, seen, h, i, "host %q is already hosts[%d]; each tenant has its own") {
			g.Hosts = append(g.Hosts, h)
		}
	}
	if f.has("count") && g.Count != len(n.Content) {
		d.fail(f.at("count"), join(path, "count"), nil, "count %d but %s hosts (want count: %s, or leave it out)", g.Count, strconv.Itoa(len(n.Content)), strconv.Itoa(len(n.Content)))
	}
	g.Count = len(n.Content)
}

// hostsNode writes a group's hosts list, or nil for none.
func hostsNode(hosts []string) *yaml.Node {
	if len(hosts) == 0 {
		return nil
	}
	var items []*yaml.Node
	for _, h := range hosts {
		items = append(items, strNode(h))
	}
	return seqNode(true, items...)
}

func (d *decoder) hostTemplate(n *yaml.Node, path, src string, count int) {
	t, ok := d.template(n, path, src)
	if !ok {
		return
	}
	// Every host is the template with other digits, so checking the first
	// and the last checks them all.
	for _, i := range []int{1, count} {
		h := t.expand(i)
		if why := badHost(h); why != "" {
			d.fail(n, path, nil, "tenant %d's host %q %s (want e.g. site{i}.example.com)", i, h, why)
			return
		}
	}
}

// badHost says what is wrong with h as a Host header, or "".
func badHost(h string) string {
	if strings.TrimSpace(h) == "" {
		return "is empty"
	}
	if len(h) > 255 {
		return "is longer than 255 bytes"
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._:[]", r)) {
			return fmt.Sprintf("holds %q", r)
		}
	}
	return ""
}
