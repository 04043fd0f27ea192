package errtree

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

type fieldError struct{ field string }

func (e *fieldError) Error() string { return e.field + ": bad" }

func fields(errs []*fieldError) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.field)
	}
	return out
}

func TestFind(t *testing.T) {
	a, b, c := &fieldError{"a"}, &fieldError{"b"}, &fieldError{"c"}
	plain := errors.New("plain")
	asField := func(err error) (*fieldError, bool) { return &fieldError{"(" + err.Error() + ")"}, true }
	tests := []struct {
		name  string
		err   error
		other func(error) (*fieldError, bool)
		want  []string
	}{
		{"nil", nil, asField, nil},
		{"one", a, nil, []string{"a"}},
		{"wrapped", fmt.Errorf("x: %w", a), nil, []string{"a"}},
		{"joined in order", errors.Join(a, fmt.Errorf("y: %w", errors.Join(b, c))), nil, []string{"a", "b", "c"}},
		{"plain leaf dropped", errors.Join(a, plain), nil, []string{"a"}},
		{"plain leaf kept", errors.Join(a, fmt.Errorf("z: %w", plain)), asField, []string{"a", "(plain)"}},
		{"no wrapped error is a leaf", fmt.Errorf("no verb"), asField, []string{"(no verb)"}},
	}
	for _, tc := range tests {
		if got := fields(Find(tc.err, tc.other)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Find = %q, want %q", tc.name, got, tc.want)
		}
	}
}
