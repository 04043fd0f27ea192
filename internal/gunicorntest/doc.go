// Package gunicorntest finds real gunicorn and runs it, with a WSGI app of
// the test's own, for tests that hold the fake backend to what gunicorn
// itself does.
//
// gunicorn runs in the foreground as the test's child, with its app, its
// configuration and its worker heartbeat files in the test's temporary
// directory and its log kept for the test, and is stopped when the test
// ends (package testproc runs it).
//
// It never runs gunicorn outside a test, and never on an address other than
// loopback.
package gunicorntest
