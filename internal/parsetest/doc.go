// Package parsetest holds the property every parser of user input is
// fuzzed for: it never panics, what it accepts is in range, and what it
// accepts formats back to text that parses to the same value.
//
// It parses nothing itself: each parser's fuzz test passes its own
// functions.
package parsetest
