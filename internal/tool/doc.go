// Package tool finds the real programs (nginx, gunicorn, …) that
// conformance tests hold stampede against, and decides what a test does
// when one is missing: skip, saying why, or fail where CI requires it.
//
// It never installs anything; CI does (see .ci/run).
package tool
