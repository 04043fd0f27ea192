package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Exit statuses (DESIGN.md, "Command line").
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
	exitSLO   = 3
	// exitInconclusive: the live engine could not play the scenario
	// faithfully here; its own delays could explain the SLO verdicts.
	exitInconclusive = 4
	exitInterrupted  = 130
)

// usageError marks bad usage or a bad scenario: exit 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns a usageError; commands return it for bad flags and input.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// asUsage marks err, if not nil, as bad usage.
func asUsage(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

// exitCodeError carries an exit status other than 1 that is not a failure
// to report as an error, such as a failed SLO (3) or an interrupt (130).
type exitCodeError struct {
	code int
	msg  string
}

func (e exitCodeError) Error() string { return e.msg }

// commands lists the subcommands' constructors, one a file of this package;
// help lists them sorted by name.
var commands = []func() *cobra.Command{
	newRunCmd, newCompareCmd, newReportCmd, newValidateCmd, newImportCmd,
	newNginxConfigCmd, newBackendCmd, newProxyCmd,
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "stampede",
		Short: "Replay overload incidents of multi-tenant web servers and choose limits before deploying them",
		Long: `stampede plays scenarios of many tenants against a gunicorn-like fake backend
behind an nginx-like limiting proxy (limit_conn, limit_req), live over loopback
HTTP or in virtual time, and reports what every tenant saw.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	// No subcommand is bad usage: say what there is, exit 2.
	root.RunE = func(c *cobra.Command, args []string) error {
		c.SetOut(c.ErrOrStderr())
		_ = c.Help()
		return exitCodeError{exitUsage, "no command given"}
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{suggestFlag(c, err)} })
	for _, c := range commands {
		root.AddCommand(c())
	}
	return root
}

// run executes the command line args and returns the exit status. It is
// main without the process: tests call it in-process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetIn(stdin)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ec exitCodeError
	if errors.As(err, &ec) {
		if ec.msg != "" {
			fmt.Fprintln(stderr, "stampede:", ec.msg)
		}
		return ec.code
	}
	fmt.Fprintln(stderr, "stampede:", err)
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return exitUsage
	}
	return exitError
}

// isCobraUsage reports errors cobra makes for bad arguments (unknown
// command, wrong number of args), which come back as plain errors.
func isCobraUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "unknown flag", "unknown shorthand", "flag needs an argument", "invalid argument \""} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}
