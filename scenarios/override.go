package scenarios

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file applies --set PATH=VALUE overrides to the YAML node tree before
// it is checked, and reads --sweep axes.
//
// A PATH is the YAML path with dots: backend.workers, proxy.limit_conn.per_key.
// A list element is named by its index from 0 (backend.routes.1.service) or
// by its group or name (tenants.user-x.load.users, backend.routes.page.service).
// Keys that are absent are created. A VALUE is read as YAML, so
// 'tenants.user-x.load.routes={page: 1}' sets a mapping; a VALUE that is not
// valid YAML is taken as a string, and an empty VALUE removes the field, which
// then takes its default.

// ParseSet splits "PATH=VALUE".
func ParseSet(s string) (path, value string, err error) {
	path, value, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", fmt.Errorf("%q is not PATH=VALUE (want e.g. proxy.limit_conn.per_key=off)", s)
	}
	path = dotIndexes(strings.TrimSpace(path))
	if err := checkSetPath(path); err != nil {
		return "", "", err
	}
	return path, value, nil
}

func checkSetPath(path string) error {
	if path == "" {
		return errors.New("empty path (want e.g. proxy.limit_conn.per_key)")
	}
	for _, seg := range strings.Split(path, ".") {
		if seg == "" || strings.ContainsAny(seg, " \t\r\n=") {
			return fmt.Errorf("%q is not a dotted path (want e.g. tenants.user-x.load.users)", path)
		}
	}
	return nil
}

// ParseSweep reads a --sweep axis, "PATH=V1,V2,...". Commas inside quotes,
// brackets or braces do not split, so a value holding a comma is written
// quoted: 'backend.routes.page.service="lognormal:median=30ms,p99=200ms",2s'.
func ParseSweep(s string) (Axis, error) {
	path, values, err := ParseSet(s)
	if err != nil {
		return Axis{}, err
	}
	a := Axis{Path: path}
	for _, v := range splitTop(values) {
		v = strings.TrimSpace(v)
		if v == "" {
			return Axis{}, fmt.Errorf("--sweep %q has an empty value (want e.g. %s=off,2,4)", s, path)
		}
		if slices.Contains(a.Values, v) {
			return Axis{}, fmt.Errorf("--sweep %q has the value %s twice: each point is played once", s, v)
		}
		a.Values = append(a.Values, v)
	}
	if len(a.Values) > maxAxisSize {
		return Axis{}, fmt.Errorf("--sweep %q has %d values; at most %d", s, len(a.Values), maxAxisSize)
	}
	return a, nil
}

// splitTop splits s at commas outside quotes, brackets and braces.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '[' || c == '{':
			depth++
		case (c == ']' || c == '}') && depth > 0:
			depth--
		case c == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// valueNode reads a --set VALUE as YAML.
func valueNode(value string) *yaml.Node {
	if strings.TrimSpace(value) == "" {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(value), &doc); err == nil && doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0]
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}
}

// applySet sets PATH to VALUE in the tree under root, marking every node it
// adds with "PATH=VALUE" in origin so that errors name the override.
func applySet(root *yaml.Node, path, value string, origin map[*yaml.Node]string) error {
	mark := path + "=" + value
	val := valueNode(value)
	markAll(val, origin, mark)
	newKey := func(k string) *yaml.Node {
		n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}
		origin[n] = mark
		return n
	}
	segs := strings.Split(path, ".")
	cur := root
	for i, seg := range segs {
		last := i == len(segs)-1
		here := strings.Join(segs[:i], ".")
		if cur.Kind == yaml.MappingNode {
			vi := findKey(cur, seg)
			if vi < 0 {
				var child *yaml.Node
				if last {
					child = val
				} else {
					child = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
					origin[child] = mark
				}
				cur.Content = append(cur.Content, newKey(seg), child)
				cur = child
				continue
			}
			if last {
				cur.Content[vi] = val
				return nil
			}
			child := own(cur.Content[vi], origin)
			if child.Kind == yaml.ScalarNode && (child.Tag == "!!null" || isOff(child)) {
				// A limit that was off, or a field that was empty, gets a
				// new mapping to set into.
				child = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				origin[child] = mark
			}
			cur.Content[vi] = child
			cur = child
			continue
		}
		if cur.Kind == yaml.SequenceNode {
			j, err := listElement(cur, seg, here, segs[i:])
			if err != nil {
				return err
			}
			if last {
				cur.Content[j] = val
				return nil
			}
			cur.Content[j] = own(cur.Content[j], origin)
			cur = cur.Content[j]
			continue
		}
		if here == "" {
			return errors.New("the file is not a mapping of fields")
		}
		return fmt.Errorf("%s is %s, not a mapping or a list, so it has no %q", here, describe(cur), seg)
	}
	return nil
}

// findKey returns the index in m.Content of key's value, or -1. A key that m
// has only through a merge (<<) is copied into m first, so that setting
// into it changes m alone.
func findKey(m *yaml.Node, key string) int { return findKeyDepth(m, key, 0) }

func findKeyDepth(m *yaml.Node, key string, depth int) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind == yaml.ScalarNode && k.Tag != "!!merge" && k.Value == key {
			return i + 1
		}
	}
	if depth >= maxMergeNest {
		return -1
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind != yaml.ScalarNode || k.Tag != "!!merge" {
			continue
		}
		srcs := []*yaml.Node{deref(m.Content[i+1])}
		if s := srcs[0]; s != nil && s.Kind == yaml.SequenceNode {
			srcs = srcs[:0]
			for _, e := range s.Content {
				srcs = append(srcs, deref(e))
			}
		}
		for _, s := range srcs {
			if s == nil || s.Kind != yaml.MappingNode || s == m {
				continue
			}
			if j := findKeyDepth(s, key, depth+1); j >= 0 {
				m.Content = append(m.Content, copyNode(s.Content[j-1]), copyNode(s.Content[j]))
				return len(m.Content) - 1
			}
		}
	}
	return -1
}

// listElement finds the list element seg names: an index, or the element
// whose group or name is seg.
func listElement(list *yaml.Node, seg, here string, rest []string) (int, error) {
	if j, err := strconv.Atoi(seg); err == nil {
		if j < 0 || j >= len(list.Content) {
			return 0, fmt.Errorf("%s has no element %d (it has %d, from 0)", here, j, len(list.Content))
		}
		return j, nil
	}
	var names []string
	for j, e := range list.Content {
		e = deref(e)
		if e == nil || e.Kind != yaml.MappingNode {
			continue
		}
		for _, field := range []string{"group", "name"} {
			if vi := findKey(e, field); vi >= 0 {
				if v := deref(e.Content[vi]); v != nil && v.Kind == yaml.ScalarNode {
					if v.Value == seg {
						return j, nil
					}
					names = append(names, v.Value)
				}
				break
			}
		}
	}
	if len(names) == 0 {
		return 0, fmt.Errorf("%s is a list; name an element by its index, as %s", here, strings.Join(append([]string{here, "0"}, rest...), "."))
	}
	return 0, fmt.Errorf("%s has no element %q%s (known: %s; or an index from 0)", here, seg, suggest(seg, names), strings.Join(names, ", "))
}

// deref follows aliases, with a bound against cycles.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i > 100 {
			return nil
		}
		n = n.Alias
	}
	return n
}

// own returns a node the caller may change without changing other parts of
// the file: an alias or an anchored node (which aliases may share) is
// copied.
func own(n *yaml.Node, origin map[*yaml.Node]string) *yaml.Node {
	if n.Kind != yaml.AliasNode && n.Anchor == "" {
		return n
	}
	src := deref(n)
	if src == nil {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	}
	c := deepCopy(src, origin, origin)
	c.Anchor = ""
	return c
}

// copyNode copies n and its children, keeping their positions; aliases
// stay aliases of the same anchors.
func copyNode(n *yaml.Node) *yaml.Node {
	c := *n
	if n.Kind != yaml.AliasNode && len(n.Content) > 0 {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, e := range n.Content {
			c.Content[i] = copyNode(e)
		}
	}
	return &c
}

// deepCopy copies the tree under n, carrying the origin marks from one map to
// the other. Aliases keep pointing into the original tree, which is not
// changed.
func deepCopy(n *yaml.Node, from, to map[*yaml.Node]string) *yaml.Node {
	c := *n
	if m, ok := from[n]; ok {
		to[&c] = m
	}
	if n.Kind != yaml.AliasNode && len(n.Content) > 0 {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, e := range n.Content {
			c.Content[i] = deepCopy(e, from, to)
		}
	}
	return &c
}

func markAll(n *yaml.Node, origin map[*yaml.Node]string, mark string) {
	origin[n] = mark
	if n.Kind != yaml.AliasNode {
		for _, e := range n.Content {
			markAll(e, origin, mark)
		}
	}
}

// dotIndexes writes list indexes in brackets as path segments:
// proxy.locations[0].limit_conn.per_key is proxy.locations.0.limit_conn.per_key.
func dotIndexes(path string) string {
	if !strings.Contains(path, "[") {
		return path
	}
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		c := path[i]
		if c == '[' {
			if j := strings.IndexByte(path[i:], ']'); j > 1 {
				if _, err := strconv.Atoi(path[i+1 : i+j]); err == nil {
					b.WriteByte('.')
					b.WriteString(path[i+1 : i+j])
					i += j
					continue
				}
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}
