// Package h1 owns a lean HTTP/1.1 client: requests without a body over
// keep-alive connections that a dial function makes (loopback TCP or
// internal/memnet), written and read by the caller's goroutine, for the
// load generator and the live engine's probes, which must pay what its
// requests pay.
//
// It never starts a goroutine, never speaks HTTP/2 or TLS, never follows
// redirects and never sends a body; requests it cannot send are refused
// (ErrBody).
package h1
