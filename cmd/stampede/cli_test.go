package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"stampede/internal/testproc"
)

// runCLI runs the command line in-process, as main does, and returns its
// exit status and output.
func runCLI(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(ctx, args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// writeScenario writes body as a scenario file in a new temporary directory
// and returns its path.
func writeScenario(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// readFile returns the contents of the file at path, and fails the test at
// once when it cannot.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readJSON reads the JSON file at path into a T, and fails the test at
// once when it cannot.
func readJSON[T any](t *testing.T, path string) *T {
	t.Helper()
	var v T
	if err := json.Unmarshal(readFile(t, path), &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &v
}

// cliStopWithin is how long a command started by startCLI has to return
// once its context is done.
const cliStopWithin = 10 * time.Second

// startCLI runs the command line in-process in the background until the
// test ends, and returns the submatches of listening in its stderr once
// they are there: where it listens. It fails the test when the command
// returns first or has not said so within 10 seconds. At the end of the
// test it ends the command's context, and fails the test unless the
// command then returns exitOK within cliStopWithin.
func startCLI(t *testing.T, listening *regexp.Regexp, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr testproc.Output
	var code int
	// early: the command returned before it said where it listens, which
	// is reported already.
	early := false
	exited := make(chan struct{}) // closed once run has returned, with code set
	go func() {
		code = run(ctx, args, strings.NewReader(""), io.Discard, &stderr)
		close(exited)
	}()
	t.Cleanup(func() {
		cancel()
		if early {
			return
		}
		select {
		case <-exited:
			if code != exitOK {
				t.Errorf("stampede %s exited %d once its context was done, want %d: %s", args[0], code, exitOK, stderr.String())
			}
		case <-time.After(cliStopWithin):
			t.Errorf("stampede %s still runs %v after its context was done: %s", args[0], cliStopWithin, stderr.String())
		}
	})
	var m []string
	err := testproc.Wait(10*time.Second, exited, func() bool {
		m = listening.FindStringSubmatch(stderr.String())
		return m != nil
	})
	if errors.Is(err, testproc.ErrExited) {
		early = true
		t.Fatalf("stampede %s exited %d before it said where it listens: %s", strings.Join(args, " "), code, stderr.String())
	}
	if err != nil {
		t.Fatalf("stampede %s did not say where it listens (%v): %q", strings.Join(args, " "), err, stderr.String())
	}
	return m
}

// runExit runs the command line in-process and fails the test at once,
// with the command's output, unless it exits want. It returns the output.
func runExit(t *testing.T, ctx context.Context, want int, args ...string) (stdout, stderr string) {
	t.Helper()
	code, stdout, stderr := runCLI(t, ctx, args...)
	if code != want {
		t.Fatalf("stampede %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, stdout, stderr)
	}
	return stdout, stderr
}

// runWant runs the command line in-process, and fails the test at once
// unless it exits exitOK, and for every one of wants that its stdout
// lacks. It returns the stdout.
func runWant(t *testing.T, args []string, wants ...string) string {
	t.Helper()
	stdout, _ := runExit(t, t.Context(), exitOK, args...)
	for _, want := range wants {
		if !strings.Contains(stdout, want) {
			t.Errorf("stampede %s: stdout lacks %q:\n%s", strings.Join(args, " "), want, stdout)
		}
	}
	return stdout
}

// refusal is a command line, past the command's name, and a part of the
// error it must be refused with.
type refusal struct {
	args []string
	want string
}

// runRefusals runs command with the arguments of each refusal, as
// runRefused.
func runRefusals(t *testing.T, command string, refusals []refusal) {
	t.Helper()
	for _, r := range refusals {
		runRefused(t, r.want, append([]string{command}, r.args...)...)
	}
}

// runRefused runs the command line in-process and fails the test unless
// the command refuses it as a usage error: exit exitUsage, with want in
// its stderr.
func runRefused(t *testing.T, want string, args ...string) {
	t.Helper()
	code, _, stderr := runCLI(t, t.Context(), args...)
	if code != exitUsage || !strings.Contains(stderr, want) {
		t.Errorf("stampede %s: exit %d, stderr %q; want exit %d and %q", strings.Join(args, " "), code, stderr, exitUsage, want)
	}
}

// TestBusyPort holds that backend and proxy refuse a port in use with exit
// 1, naming the address.
func TestBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	want := "stampede: listen " + addr + ": address already in use"
	for _, args := range [][]string{
		{"backend", "--listen", addr},
		{"proxy", "--listen", addr, "--upstream", "http://127.0.0.1:1"},
	} {
		code, _, stderr := runCLI(t, t.Context(), args...)
		if code != exitError || !strings.Contains(stderr, want) {
			t.Errorf("%s on a busy port: exit %d, stderr %q; want exit %d and %q", args[0], code, stderr, exitError, want)
		}
	}
}
