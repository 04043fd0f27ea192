// Package clock owns the time of a live run: precise waits, the scale
// between model and wall time, and the Clock that carries both to the
// components that read the time.
//
// Go's timers wake up to about a millisecond late on Linux: the runtime's
// poller sleeps in whole milliseconds. A live run at time scale 0.01 turns
// that millisecond into 100 ms of model time, on every service time and
// every scheduled send. Wait with precise set waits on a kernel
// high-resolution timer of its own (a timerfd from a pool, read through the
// runtime's poller, so no thread is held asleep, nothing spins, and the
// poller wakes the waiter itself); a wait longer than Span first sleeps on
// an ordinary timer until the deadline is near. A Pacer aims a stream of
// such waits early by the lateness it sees, and Wakes counts that lateness
// process-wide.
//
// Scale is the one place model durations become wall durations and back;
// ModelClock reads model time off the wall clock from an anchor; Clock
// bundles a ModelClock with the choice of timers, and its zero value is
// real time with the runtime's timers. Components that share a Clock agree
// on model time.
//
// The package never spins, never holds a thread asleep, never reads a flag
// or prints, and knows nothing of requests, limits or scenarios: it reads
// time.Now and the runtime's timers, so testing/synctest's fake clock
// drives everything but the precise timer.
package clock
