// Package loadgen is the live engine's HTTP load generator: Driver sends a
// scenario's load over real connections at the intended times of package
// workload's schedules, measures latency from those times (no coordinated
// omission), its own send lateness and stalls, and hands every result to a
// sink.
//
// It never decides the load model itself (when to send, the closed-model
// loop, the in-flight caps and the drain are package workload's), and
// knows nothing of reports.
package loadgen
