// Package nginxtest finds real nginx and runs it for tests that hold the
// configurations stampede writes to what nginx itself does.
//
// nginx runs in the foreground as the test's child, with its prefix,
// configuration, pid file and temporary files in the test's temporary
// directory and its log on stderr, and is stopped when the test ends
// (package testproc runs it). Conf wraps a test's http {} body in the
// settings every such nginx needs.
//
// It never starts nginx outside a test or on an address other than
// loopback, and never touches the system's nginx configuration.
package nginxtest
