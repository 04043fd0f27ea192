package scenarios

import (
	"fmt"
	"os"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// SetPaths returns the --set and --sweep paths of the scenario file at
// path, in file order: every field the file writes, list elements named by
// their group or name where they have one (tenants.user-x.load.users), else
// by their index. It reads the file only as YAML, so it also lists the paths
// of a file that does not validate; it is meant for shell completion.
func SetPaths(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("listing the paths of %s: %w", path, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("listing the paths of %s: %w", path, err)
	}
	var out []string
	var walk func(n *yaml.Node, here string, depth int)
	walk = func(n *yaml.Node, here string, depth int) {
		n = deref(n)
		if n == nil || depth > 20 {
			return
		}
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, here, depth+1)
			}
		case yaml.MappingNode:
			if here != "" {
				out = append(out, here)
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], joinPath(here, n.Content[i].Value), depth+1)
			}
		case yaml.SequenceNode:
			out = append(out, here)
			for j, e := range n.Content {
				walk(e, joinPath(here, elementName(e, j)), depth+1)
			}
		default:
			out = append(out, here)
		}
	}
	walk(&doc, "", 0)
	return out, nil
}

func joinPath(here, seg string) string {
	if here == "" {
		return seg
	}
	return here + "." + seg
}

// elementName is how a --set path names list element e at index j.
func elementName(e *yaml.Node, j int) string {
	if e = deref(e); e != nil && e.Kind == yaml.MappingNode {
		for _, field := range []string{"group", "name"} {
			if vi := findKey(e, field); vi >= 0 {
				if v := deref(e.Content[vi]); v != nil && v.Kind == yaml.ScalarNode && v.Value != "" {
					return v.Value
				}
			}
		}
	}
	return strconv.Itoa(j)
}
