// Package sim plays a scenario as a discrete-event simulation in virtual
// time. It drives the same pure cores as the live engine — package
// workload's load model, limit's Policy and workerpool's Pool —
// with explicit model time, so an hour of traffic takes a fraction of a
// second and the two engines cannot drift apart. Run has the live engine's
// shape: results into a sink, samples into a sampler (report.Recorder is
// both), and the RunInfo the recorder needs at the end.
//
// It never opens a socket, starts a goroutine or reads the clock but to
// report the wall time a run took.
package sim
