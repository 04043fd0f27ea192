package errtree

// Find returns the errors of type E in err's tree, in order, depth first;
// it does not look inside an E. A leaf of the tree (an error that wraps
// nothing) that is not an E is given to other, whose result, when ok,
// stands in the leaf's place; with a nil other such leaves are dropped.
// Find returns nil for a nil err.
func Find[E error](err error, other func(error) (E, bool)) []E {
	if err == nil {
		return nil
	}
	if e, ok := err.(E); ok {
		return []E{e}
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		var out []E
		for _, x := range u.Unwrap() {
			out = append(out, Find(x, other)...)
		}
		return out
	case interface{ Unwrap() error }:
		if inner := u.Unwrap(); inner != nil {
			return Find(inner, other)
		}
	}
	if other != nil {
		if e, ok := other(err); ok {
			return []E{e}
		}
	}
	return nil
}
