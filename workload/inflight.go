package workload

import "stampede/scenarios"

// The open model's in-flight caps, which both engines apply: an arrival
// over either is Dropped, counted and never sent. Closed-model users are
// not counted; their number already bounds them.

// Defaults of the caps.
const (
	// DefaultTenantInFlight caps one open-model tenant's requests in flight
	// when its Load.MaxInFlight is zero.
	DefaultTenantInFlight = 10000
	// DefaultMaxInFlight caps all open-model requests in flight together.
	// Each one holds a connection, and that connection's reading
	// goroutine, in the live driver (HTTP/1.1 sends one request per
	// connection at a time), so the cap also bounds the file descriptors
	// a run takes.
	DefaultMaxInFlight = 10000
)

// TenantCap returns the in-flight cap of an open-model tenant with load:
// load.MaxInFlight, or DefaultTenantInFlight when that is zero or less.
func TenantCap(load *scenarios.Load) int {
	if load.MaxInFlight <= 0 {
		return DefaultTenantInFlight
	}
	return load.MaxInFlight
}

// TotalCap returns the cap over all open-model tenants an engine's option
// n asks for: n, DefaultMaxInFlight when n is zero, or 0, no cap, when n is
// negative.
func TotalCap(n int) int {
	switch {
	case n == 0:
		return DefaultMaxInFlight
	case n < 0:
		return 0
	}
	return n
}

// Admit reports whether an open-model arrival is sent when its tenant has
// tenant requests in flight under its cap tenantCap and all tenants have
// total under totalCap (0: no cap).
func Admit(tenant, tenantCap, total, totalCap int64) bool {
	return tenant < tenantCap && (totalCap <= 0 || total < totalCap)
}
