// Package h1 owns a lean HTTP/1.1 client and server.
//
// The client sends GETs over keep-alive connections that a dial function
// makes (loopback TCP or internal/memnet), written and read by the
// caller's goroutine, for the load generator and the live engine's probes,
// which must pay what its requests pay. It never starts a goroutine and
// never follows redirects. A Line is one such connection split between
// two goroutines, for the open model: one writes each request
// when it is due, the other, parked on the connection, reads its answer.
//
// The server serves an http.Handler over net.Conn for the live engine's
// in-memory fake backend and proxy, and for stampede proxy: one goroutine
// per connection, and a second one only while a handler waits on its
// request's context, to see the client leave. net/http's server reads every connection on a goroutine
// of its own while a request is served.
//
// Neither speaks HTTP/2 or TLS.
package h1
