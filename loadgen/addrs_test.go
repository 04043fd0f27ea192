package loadgen

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"stampede/scenarios"
)

// TestDriverAddressPool: closed-model users of a tenant with a pool each
// keep one address of it, in turn (scenarios.Tenant.VisitorAddr).
func TestDriverAddressPool(t *testing.T) {
	var mu sync.Mutex
	from := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		mu.Lock()
		from[host]++
		mu.Unlock()
	}))
	defer srv.Close()
	load := &scenarios.Load{Model: scenarios.Closed, Users: 6, Iterations: 2,
		Routes: []scenarios.WeightedRoute{{Route: 0, Weight: 1}}}
	d := newDriver(t, srv.URL, DriverOptions{
		Tenants: []scenarios.Tenant{{Index: 0, Name: "office", Host: "erp.example.com", Addr: "127.0.0.1",
			Addrs: netip.MustParsePrefix("127.1.0.0/30"), Load: load}},
		Horizon:   time.Second,
		TimeScale: 0.1,
	})
	var sink resultSink
	if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
		t.Fatalf("Run: %v", err)
	}
	// Users 0..5 come from addresses 0,1,2,3,0,1 of the pool, 2 requests each.
	want := map[string]int{"127.1.0.0": 4, "127.1.0.1": 4, "127.1.0.2": 2, "127.1.0.3": 2}
	mu.Lock()
	defer mu.Unlock()
	if len(from) != len(want) {
		t.Errorf("requests came from %v, want %v", from, want)
	}
	for a, n := range want {
		if from[a] != n {
			t.Errorf("%d requests from %s, want %d (all: %v)", from[a], a, n, from)
		}
	}
}
