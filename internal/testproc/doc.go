// Package testproc runs the programs a test needs beside it (nginx,
// gunicorn) as the test's children, and waits for them the same way
// whether they are a child process or a command run in-process.
//
// A child runs in the foreground with its output kept (Output), is
// stopped when the test ends, and is waited for by polling (Wait) until
// it is ready, has exited, or a bound has passed. A listener on a free
// loopback port comes from Listen for a server the test runs in-process,
// and from Inherit for a child: a port picked free and closed again can
// be taken by another program before the child listens there.
//
// It never finds or installs the programs (package tool does the first,
// CI the second), never leaves a child running after its test, and never
// listens or connects beyond loopback.
package testproc
