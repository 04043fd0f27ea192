// Package workload is the load model both engines drive: what a request's
// end is (Result, Outcome) and where results go (Sink, Sampler); when
// open-model tenants send (Arrivals, recorded traces) and to which route
// (Mix, TenantRand); when a closed-model user sends again (Closed,
// NextSend); the open model's in-flight caps (TenantCap, TotalCap, Admit);
// and one rule for when load stops and how long a run waits for what is
// still in flight (Stop, Drain, Reached).
//
// It is pure: every function takes model time explicitly and nothing here
// sleeps, reads a clock, opens a connection or starts a goroutine. The live
// driver (package loadgen) and the simulator (package sim) call the same
// functions, so that the two engines cannot drift apart.
package workload
