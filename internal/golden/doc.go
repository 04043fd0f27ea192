// Package golden holds rendered text to the golden files of a test, and
// rewrites them when the test runs with -update.
//
// A test package that imports golden gets its -update flag and must not
// declare one of its own. It never writes a golden file without -update.
package golden
