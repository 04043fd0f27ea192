// Package fakebackend is the live fake gunicorn backend: an http.Handler
// (Backend) over workerpool's Pool, played in model time scaled to the wall
// clock, with its server (Serve), the accept gate that leaves the backlog to
// the kernel's accept queue, the stats endpoint and a gunicorn-format access
// log.
//
// It owns no rule of the model: who gets a worker, when a worker is killed,
// booted or recycled, and what a full backlog does are all workerpool's.
// Work is waiting on timers, never spinning; it never prints or exits.
package fakebackend
