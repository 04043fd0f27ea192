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

// TestBadFlags holds each command to refusing bad flags as usage errors
// (exit 2) that name the flag and what is wrong with its value.
func TestBadFlags(t *testing.T) {
	for _, c := range []struct {
		command  string
		refusals []refusal
	}{
		{"backend", []refusal{
			{[]string{"--workers", "0"}, "--workers 0: 0 is below 1 (want e.g. 8)"},
			{[]string{"--workers", "70000"}, "--workers 70000: 70000 is over 65536 (want e.g. 8)"},
			{[]string{"--scenario", "../../scenarios/stock-balance.yaml", "--workers", "70000"}, "--workers 70000: 70000 is over 65536 (want e.g. 8)"},
			{[]string{"--backlog", "2000000"}, "--backlog 2000000: 2000000 is over 1048576 (want e.g. 2048)"},
			{[]string{"--threads", "1001"}, "--threads 1001: 1001 is over 1000 (want e.g. 4)"},
			{[]string{"--boot", "2h"}, "--boot 2h0m0s: 2h is longer than 1h (want e.g. 300ms)"},
			{[]string{"--max-requests", "-1"}, "--max-requests -1: -1 is below 0 (want e.g. 5000)"},
			{[]string{"--backlog-overflow", "later"}, `--backlog-overflow "later": "later" is not drop or reset`},
			{[]string{"--workers", "x"}, `invalid argument "x" for "--workers"`},
			{[]string{"--backlog", "-1"}, "--backlog -1: -1 is below 0 (want e.g. 2048)"},
			{[]string{"--timeout", "-5s"}, `--timeout -5s: "-5s" is negative (want e.g. 120s)`},
			{[]string{"--timeout", "2 minutes"}, `invalid argument "2 minutes" for "--timeout"`},
			{[]string{"--on-client-abort", "stop"}, `--on-client-abort "stop": "stop" is not continue or cancel`},
			{[]string{"--time-scale", "0"}, "--time-scale 0: want a number above 0"},
			{[]string{"--time-scale", "-1"}, "--time-scale -1: want a number above 0"},
			{[]string{"--route", "/x=fast"}, `--route "/x=fast": bad service-time distribution "fast": "fast" is not a duration (want e.g. 2s`},
			{[]string{"--route", "/x"}, `--route "/x": want PATH=DIST`},
			{[]string{"--route", "x=2s"}, `--route "x=2s": path "x" is not a URL path`},
			{[]string{"--route", "/a=1s", "--route", "/a=2s"}, `--route "/a=2s": path /a is given twice`},
			{[]string{"--route", "/a=uniform:4m..2m"}, "MAX is below MIN"},
			{[]string{"--listen", "9000"}, `--listen "9000": want HOST:PORT`},
			{[]string{"--scenario", "does-not-exist.yaml"}, "does-not-exist.yaml"},
			{[]string{"--bogus"}, "unknown flag: --bogus"},
			{[]string{"extra"}, `unknown command "extra"`},
		}},
		{"proxy", []refusal{
			{nil, "--upstream is required"},
			{[]string{"--upstream", "http://127.0.0.1:1", "--limit-conn", "$host=x"}, `--limit-conn "$host=x": limit "x"`},
			{[]string{"--upstream", "http://127.0.0.1:1", "--limit-conn", "$hots=4"}, "--limit-conn"},
			{[]string{"--upstream", "http://127.0.0.1:1", "--limit-req", "$host=fast"}, `--limit-req "$host=fast": rate "fast"`},
			{[]string{"--upstream", "http://127.0.0.1:1", "--status", "200"}, "--status 200"},
			{[]string{"--upstream", "ftp://x"}, "--upstream"},
			{[]string{"--upstream", "http://127.0.0.1:1", "--listen", "8080"}, "--listen"},
			{[]string{"--upstream", "http://127.0.0.1:1", "--read-timeout", "soon"}, "read-timeout"},
			{[]string{"--upstream", "http://127.0.0.1:1", "--max-conns", "0"}, "--max-conns"},
			{[]string{"--upstream", "http://127.0.0.1:1", "--upstream-keepalive", "-1"}, "--upstream-keepalive -1: want 0"},
			{[]string{"--upstream", "http://127.0.0.1:1", "--upstream-keepalive", "5000"}, "--upstream-keepalive 5000"},
			{[]string{"--frobnicate"}, "unknown flag"},
			{[]string{"--upstream", "http://127.0.0.1:1", "--limit-conn", "/api"}, `--limit-conn "/api": a location's limit is PATH:LIMIT`},
			{[]string{"--upstream", "http://127.0.0.1:1", "--limit-req", "/a,b:$host=1r/s"}, `--limit-req "/a,b:$host=1r/s": "b" does not start with "/"`},
		}},
	} {
		for _, r := range c.refusals {
			runRefused(t, r.want, append([]string{c.command}, r.args...)...)
		}
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
