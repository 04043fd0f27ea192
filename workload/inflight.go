package workload

// The in-flight caps of the open model, which both engines apply.
const (
	// DefaultTenantInFlight caps one open-model tenant's requests in flight
	// when its Load.MaxInFlight is zero.
	DefaultTenantInFlight = 10000
	// DefaultMaxInFlight caps all open-model requests in flight together.
	// Each one holds a goroutine and a TCP connection in the live driver
	// (HTTP/1.1 sends one request per connection at a time), so the cap
	// also bounds the file descriptors a run takes.
	DefaultMaxInFlight = 10000
)
