package levenshtein

import "testing"

func TestDistance(t *testing.T) {
	for i, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"engine", "engine", 0},
		{"engin", "engine", 1},
		{"egnine", "engine", 2}, // an exchange is two edits
		{"kitten", "sitting", 3},
		{"request_time", "request_tim", 1},
		{"host", "hots", 2},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("step %d: Distance(%q, %q) = %d, want %d", i, c.a, c.b, got, c.want)
		}
		if got := Distance(c.b, c.a); got != c.want {
			t.Errorf("step %d: Distance(%q, %q) = %d, want %d", i, c.b, c.a, got, c.want)
		}
	}
}
