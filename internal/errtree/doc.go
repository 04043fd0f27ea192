// Package errtree finds the errors of one type in the tree that
// errors.Join and %w wrapping build, so that a Validate method can return
// every bad field at once and its caller can still list them one by one.
//
// It declares no error types of its own and never wraps or changes an
// error.
package errtree
