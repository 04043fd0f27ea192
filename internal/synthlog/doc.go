// Package synthlog writes a made-up nginx access log of an incident, for the
// import benchmarks and golden tests: the same lines for the same seed.
//
// It never parses a log; package accesslog does.
package synthlog
