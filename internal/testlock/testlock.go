package testlock

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Patience bounds how long Main and MainExclusive wait for the lock before
// the tests go on without it.
const Patience = 5 * time.Minute

// path is the lock file, one per user of the machine.
func path() string {
	return filepath.Join(os.TempDir(), "stampede-tests-"+uid()+".lock")
}

// patience returns how long to wait for the lock and the quiet: Patience,
// or a quarter of the test binary's -test.timeout when that is less, so
// that the wait never eats the tests' own time. The go command kills a
// test binary some time after its timeout whatever it was doing.
func patience() time.Duration {
	if !flag.Parsed() {
		flag.Parse()
	}
	p := Patience
	if f := flag.Lookup("test.timeout"); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			if d, ok := g.Get().(time.Duration); ok && d > 0 {
				p = min(p, d/4)
			}
		}
	}
	return p
}

// Main runs m's tests with the lock held shared and returns their exit
// code: TestMain(m) { os.Exit(testlock.Main(m)) }.
func Main(m *testing.M) int {
	if release, ok := acquire(path(), false, patience()); ok {
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
	wait := patience()
	release, ok := acquire(path(), true, wait)
	if !ok {
		fmt.Fprintf(os.Stderr, "testlock: no exclusive lock after %v; other tests may be running\n", time.Since(start).Round(time.Second))
	} else {
		defer release()
	}
	quiet := min(quietPatient, wait)
	if !waitQuiet(quiet) {
		fmt.Fprintf(os.Stderr, "testlock: the CPUs stayed under %.0f%% idle for %v; running anyway\n", 100*quietIdle, quiet)
	}
	return m.Run()
}
