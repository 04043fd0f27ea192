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
package testlock

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Patience bounds how long Main and MainExclusive wait for the lock before the test
// goes on without it.
const Patience = 5 * time.Minute

// path is the lock file, one per user of the machine.
func path() string {
	return filepath.Join(os.TempDir(), "stampede-tests-"+uid()+".lock")
}

// Main runs m's tests with the lock held shared and returns their exit
// code: TestMain(m) { os.Exit(testlock.Main(m)) }.
func Main(m *testing.M) int {
	if release, ok := acquire(path(), false, Patience); ok {
		defer release()
	}
	return m.Run()
}

// MainExclusive runs m's tests with the lock held exclusively, once the
// CPUs are quiet, and returns their exit code: for a package whose tests
// hold the live engine against the wall clock. When the lock cannot be had within Patience (or at all on
// this system), the tests run without it and say so on stderr.
func MainExclusive(m *testing.M) int {
	start := time.Now()
	release, ok := acquire(path(), true, Patience)
	if !ok {
		fmt.Fprintf(os.Stderr, "testlock: no exclusive lock after %v; other tests may be running\n", time.Since(start).Round(time.Second))
	} else {
		defer release()
	}
	if !waitQuiet() {
		fmt.Fprintf(os.Stderr, "testlock: the CPUs stayed under %.0f%% idle for %v; running anyway\n", 100*quietIdle, quietPatient)
	}
	return m.Run()
}
