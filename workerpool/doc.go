// Package workerpool is the pure model of a gunicorn server behind the
// kernel's listen backlog: the Pool of sync or gthread workers, the accept
// queue and what a full one does to a connection attempt (Linux's SYN drop
// and retransmission, or a reset), the arbiter's once-a-second timeout kill,
// the boot of a replacement worker, max_requests recycling, what a client
// that leaves does to its work, the service-time distributions (Dist,
// ParseDist, Empirical) and the Config that holds all of it.
//
// Every method takes the model time as an explicit Duration, so one model
// serves the live fake backend (package fakebackend, driven by real timers)
// and the simulator (package sim, virtual time) alike.
//
// It never reads a clock, starts a goroutine, opens a socket or imports
// net/http: the HTTP shell, the listener and the access log live in
// fakebackend.
package workerpool
