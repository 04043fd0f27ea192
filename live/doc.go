// Package live plays a scenario in real time over HTTP: the fake backend and
// the limiting proxy run in-process (in memory or on loopback TCP), or an
// external target stands in for them, and loadgen's driver sends every
// tenant's load through the proxy. Run has the simulator's shape: results
// into a sink, samples into a sampler (report.Recorder is both), and the
// RunInfo the recorder needs at the end, with the run's verdict on its own
// faithfulness (Validity; Explain completes it from the results).
//
// It never reaches outside loopback unless told to, and never prints.
package live
