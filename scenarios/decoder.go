package scenarios

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// This file holds the decoder: where each mistake is recorded with its
// line and column, and the readers of single values every section uses.

// decoder collects every mistake in one pass.
type decoder struct {
	file    string
	origin  map[*yaml.Node]string // nodes a --set put in → "PATH=VALUE"
	errs    []*Error
	aliases int

	routes []string // backend route names, nil when the routes were bad
	// routesOptional lets a backend leave out its routes (ParseBackend).
	routesOptional bool
	groups         []string // tenant group names, in order
	tenantOK       bool

	sweepValues [][]*yaml.Node // the node of each sweep value, per axis
}

func (d *decoder) fail(n *yaml.Node, path string, cause error, format string, args ...any) {
	if len(d.errs) >= maxErrors {
		return
	}
	e := &Error{File: d.file, Path: path, Msg: fmt.Sprintf(format, args...), Err: cause}
	if n != nil {
		if set, ok := d.origin[n]; ok {
			e.Set = set
		} else {
			e.Line, e.Col = n.Line, n.Column
		}
	}
	d.errs = append(d.errs, e)
}

// resolve follows aliases. It returns nil for nil, for a null value, and
// past maxAliases dereferences (a billion-laughs guard).
func (d *decoder) resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		d.aliases++
		if d.aliases > maxAliases {
			if d.aliases == maxAliases+1 {
				d.fail(n, "", nil, "too many aliases (over %d)", maxAliases)
			}
			return nil
		}
		n = n.Alias
	}
	if n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") || n.Kind == 0 {
		return nil
	}
	return n
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// describe names a node's value for an error message.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

// element is one entry of a list in the file.
type element struct {
	node *yaml.Node // resolved: never nil or null
	path string     // as tenants[2]
	i    int        // its index in the list
}

// entries resolves the elements of list n at path, reporting each empty one
// as "an empty WHAT (want e.g. EXAMPLE)". It returns the others, and
// whether none was empty.
func (d *decoder) entries(n *yaml.Node, path, what, example string) (out []element, complete bool) {
	complete = true
	for i, en := range n.Content {
		ep := index(path, i)
		r := d.resolve(en)
		if r == nil {
			d.fail(en, ep, nil, "an empty %s (want e.g. %s)", what, example)
			complete = false
			continue
		}
		out = append(out, element{node: r, path: ep, i: i})
	}
	return out, complete
}

// mappings is entries for a list of mappings: it yields the fields of each
// entry that mapping accepts, checking each entry only when the loop reaches
// it, so that its mistakes are reported beside those the loop finds in it.
func (d *decoder) mappings(n *yaml.Node, path, what, example string, known []string) iter.Seq[*fields] {
	list, _ := d.entries(n, path, what, example)
	return func(yield func(*fields) bool) {
		for _, e := range list {
			if f := d.mapping(e.node, e.path, example, known); f != nil && !yield(f) {
				return
			}
		}
	}
}

// is reports whether n is of kind, reporting "N is not WANT (want e.g.
// EXAMPLE)" when it is not.
func (d *decoder) is(n *yaml.Node, path string, kind yaml.Kind, want, example string) bool {
	if n.Kind == kind {
		return true
	}
	d.fail(n, path, nil, "%s is not %s (want e.g. %s)", describe(n), want, example)
	return false
}

// template compiles src, the template at path, reporting why it does not.
func (d *decoder) template(n *yaml.Node, path, src string) (template, bool) {
	t, err := parseTemplate(src)
	if err != nil {
		d.fail(n, path, err, "%v", strings.TrimPrefix(err.Error(), errTemplate.Error()+": "))
		return t, false
	}
	return t, true
}

// fields is a checked mapping: its keys, their nodes and resolved values.
type fields struct {
	d     *decoder
	node  *yaml.Node
	path  string
	order []string
	keys  map[string]*yaml.Node
	vals  map[string]*yaml.Node // nil for a null value
}

// mapping checks that n is a mapping with only known keys (any key when
// known is nil) and no key twice, applying YAML merge keys (<<). It reports
// and returns nil otherwise.
func (d *decoder) mapping(n *yaml.Node, path, example string, known []string) *fields {
	if !d.is(n, path, yaml.MappingNode, "a mapping", example) {
		return nil
	}
	f := &fields{d: d, node: n, path: path, keys: map[string]*yaml.Node{}, vals: map[string]*yaml.Node{}}
	d.collect(f, n, known, 0)
	return f
}

func (d *decoder) collect(f *fields, n *yaml.Node, known []string, nest int) {
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		k := d.resolve(kn)
		if k == nil || k.Kind != yaml.ScalarNode {
			d.fail(kn, f.path, nil, "a key must be a plain name, not %s", describeKey(k))
			continue
		}
		if k.Tag == "!!merge" {
			merges = append(merges, vn)
			continue
		}
		name := k.Value
		if prev, dup := f.keys[name]; dup {
			if nest == 0 {
				d.fail(kn, f.path, nil, "key %q appears twice (first on line %d)", name, prev.Line)
			}
			continue
		}
		if known != nil && !slices.Contains(known, name) {
			hint := suggest(name, known)
			if hint == "" {
				hint = " (known: " + strings.Join(known, ", ") + ")"
			}
			d.fail(kn, f.path, nil, "unknown key %q%s", name, hint)
			continue
		}
		f.order = append(f.order, name)
		f.keys[name] = kn
		f.vals[name] = d.resolve(vn)
	}
	// Merged keys come after the mapping's own, which win.
	for _, m := range merges {
		if nest >= maxMergeNest {
			d.fail(m, f.path, nil, "merges (<<) nested too deep")
			return
		}
		src := d.resolve(m)
		var list []*yaml.Node
		switch {
		case src == nil:
		case src.Kind == yaml.MappingNode:
			list = []*yaml.Node{src}
		case src.Kind == yaml.SequenceNode:
			for _, e := range src.Content {
				if e := d.resolve(e); e != nil {
					list = append(list, e)
				}
			}
		}
		for _, src := range list {
			if src.Kind != yaml.MappingNode {
				d.fail(src, f.path, nil, "<< merges a mapping, not %s", describe(src))
				continue
			}
			d.collect(f, src, known, nest+1)
		}
	}
}

func describeKey(n *yaml.Node) string {
	if n == nil {
		return "null"
	}
	return describe(n)
}

// get returns the value of key, or nil when it is absent or null.
func (f *fields) get(key string) *yaml.Node { return f.vals[key] }

// has reports whether key is present with a value that is not null.
func (f *fields) has(key string) bool { return f.vals[key] != nil }

// at returns the node to blame for key: its value, or the key when the value
// is null, or the mapping when the key is absent.
func (f *fields) at(key string) *yaml.Node {
	if v := f.vals[key]; v != nil {
		return v
	}
	if k := f.keys[key]; k != nil {
		return k
	}
	return f.node
}

func (f *fields) missing(key, example string) {
	f.d.fail(f.node, join(f.path, key), nil, "missing (want e.g. %s: %s)", key, example)
	if n := len(f.d.errs); n > 0 {
		f.d.errs[n-1].missing = true
	}
}

// scalar returns n's text, reporting lists and mappings.
func (d *decoder) scalar(n *yaml.Node, path, example string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, nil, "%s is not a single value (want e.g. %s)", describe(n), example)
		return "", false
	}
	return n.Value, true
}

func (f *fields) str(key, example string, dst *string) bool {
	n := f.get(key)
	if n == nil {
		return false
	}
	s, ok := f.d.scalar(n, join(f.path, key), example)
	if ok {
		*dst = s
	}
	return ok
}

// integer reads a whole number in [lo, hi].
func (d *decoder) integer(n *yaml.Node, path, example string, lo, hi int) (int, bool) {
	s, ok := d.scalar(n, path, example)
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	switch {
	case err != nil:
		d.fail(n, path, nil, "%q is not a whole number (want e.g. %s)", s, example)
		return 0, false
	case v < lo:
		d.fail(n, path, nil, "%d is below %d (want e.g. %s)", v, lo, example)
		return 0, false
	case v > hi:
		d.fail(n, path, nil, "%d is over %d (want e.g. %s)", v, hi, example)
		return 0, false
	}
	return v, true
}

func (f *fields) integer(key, example string, lo, hi int, dst *int) bool {
	n := f.get(key)
	if n == nil {
		return false
	}
	v, ok := f.d.integer(n, join(f.path, key), example, lo, hi)
	if ok {
		*dst = v
	}
	return ok
}

func (d *decoder) number(n *yaml.Node, path, example string) (float64, bool) {
	s, ok := d.scalar(n, path, example)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		d.fail(n, path, nil, "%q is not a number (want e.g. %s)", s, example)
		return 0, false
	}
	return v, true
}

func (f *fields) boolean(key string, dst *bool) bool {
	n := f.get(key)
	if n == nil {
		return false
	}
	path := join(f.path, key)
	s, ok := f.d.scalar(n, path, "true")
	if !ok {
		return false
	}
	switch strings.ToLower(s) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		f.d.fail(n, path, nil, "%q is not true or false", s)
		return false
	}
	return true
}

func (f *fields) duration(key, example string, dst *time.Duration) bool {
	return parsed(f, key, example, dst, parseDuration)
}

func (f *fields) rate(key, example string, dst *float64) bool {
	return parsed(f, key, example, dst, parseRate)
}

// choice reads key as one of values, each named as its String writes it,
// into dst. It reports any other name, with the first value as the
// example followed by why; it returns false only then.
func choice[T fmt.Stringer](f *fields, key, why string, dst *T, values ...T) bool {
	var s string
	if !f.str(key, values[0].String(), &s) {
		return true
	}
	names := make([]string, len(values))
	for i, v := range values {
		if names[i] = v.String(); names[i] == s {
			*dst = v
			return true
		}
	}
	alts := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	f.d.fail(f.at(key), join(f.path, key), nil, "%q is not %s (want e.g. %s%s)", s, alts, names[0], why)
	return false
}

// first reports whether v is the first of its name in seen, and records it
// there with where it is; a repeat is reported at n and path by format, which
// is given v and where the first one is.
func first[W any](d *decoder, n *yaml.Node, path string, seen map[string]W, v string, where W, format string) bool {
	if prev, dup := seen[v]; dup {
		d.fail(n, path, nil, format, v, prev)
		return false
	}
	seen[v] = where
	return true
}

// parsed reads key with parse into dst; a value parse refuses is reported
// with its error and example.
func parsed[T any](f *fields, key, example string, dst *T, parse func(string) (T, error)) bool {
	n := f.get(key)
	if n == nil {
		return false
	}
	path := join(f.path, key)
	s, ok := f.d.scalar(n, path, example)
	if !ok {
		return false
	}
	v, err := parse(s)
	if err != nil {
		f.d.fail(n, path, nil, "%v (want e.g. %s)", err, example)
		return false
	}
	*dst = v
	return true
}

// name checks a group or route name: it appears in --set paths, result
// files and charts, so it is kept to letters, digits, - and _, and is not a
// bare number (which a --set path would read as a list index).
func (d *decoder) name(n *yaml.Node, path, s, example string) bool {
	ok := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			ok = false
		}
	}
	if _, err := strconv.Atoi(s); err == nil {
		ok = false
	}
	if !ok {
		d.fail(n, path, nil, "%q is not a name: use letters, digits, - and _, not only digits (want e.g. %s)", s, example)
	}
	return ok
}
