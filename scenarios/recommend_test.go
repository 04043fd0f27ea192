package scenarios

import (
	"strings"
	"testing"
)

const recommendBase = `name: r
duration: 10s
backend: {workers: 2, routes: [{name: page, path: /, service: 10ms}]}
tenants:
  - {group: other-sites, count: 2, host: "site{i}.example.com", load: {rate: 1/s}}
`

func TestRecommendBlock(t *testing.T) {
	for i, tc := range []struct {
		block string
		want  Recommend
		err   string
	}{
		{"", Recommend{}, ""},
		{"recommend: {protect: other-sites, prefer: strictest}\n", Recommend{Protect: "other-sites", Prefer: PreferStrictest}, ""},
		{"recommend: {prefer: loosest}\n", Recommend{Prefer: PreferLoosest}, ""},
		{"recommend: {prefer: margin}\n", Recommend{}, ""},
		{"recommend: {protect: other-site}\n", Recommend{}, `recommend.protect: "other-site" is not a tenant group (did you mean "other-sites"?)`},
		{"recommend: {prefer: stricest}\n", Recommend{}, `(did you mean "strictest"?)`},
		{"recommend: {protec: x}\n", Recommend{}, "protec"},
	} {
		sc, err := Parse("r.yaml", []byte(recommendBase+tc.block))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("step %d: %q: error %v, want one containing %q", i, tc.block, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("step %d: %q: %v", i, tc.block, err)
		}
		if sc.Recommend != tc.want {
			t.Errorf("step %d: %q: Recommend = %+v, want %+v", i, tc.block, sc.Recommend, tc.want)
		}
		out, again := formatted(t, sc)
		if again.Recommend != tc.want {
			t.Errorf("step %d: formatted and read again: %+v, want %+v\n%s", i, again.Recommend, tc.want, out)
		}
	}
}
