package parsetest

import "testing"

// Fuzz adds seeds to f's corpus and fuzzes parse, named name in the
// failure messages, with it. For every input s that parse accepts as v,
// check reports what is wrong with v (nil if nothing is), and, if format is
// not nil, format(v) must parse back to v. Inputs parse refuses are not
// looked at further.
func Fuzz[T comparable](f *testing.F, name string, seeds []string, parse func(string) (T, error), check func(s string, v T) error, format func(T) string) {
	f.Helper()
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parse(s)
		if err != nil {
			return
		}
		if err := check(s, v); err != nil {
			t.Fatalf("%s(%q) = %+v: %v", name, s, v, err)
		}
		if format == nil {
			return
		}
		back := format(v)
		again, err := parse(back)
		if err != nil || again != v {
			t.Fatalf("%s(%q) = %+v; formatted %q parses to %+v, %v", name, s, v, back, again, err)
		}
	})
}
