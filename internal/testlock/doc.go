// Package testlock keeps the other test binaries of `go test ./...` from
// running beside the tests that hold the live engine against the wall
// clock.
//
// The live engine plays model time faster than real time, so a stall of a
// tenth of a millisecond is milliseconds of model time; `go test ./...`
// runs packages side by side, and some are busy for seconds (a browser,
// nginx, chart rendering). Every package's TestMain holds a shared lock on
// one file while its tests run (Main); the live engine's package takes it
// exclusively (MainExclusive), waiting for the running packages to finish
// and keeping the next ones from starting until it is done.
//
// It never skips or retries a test; it only orders test binaries.
package testlock
