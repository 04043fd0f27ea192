package loadgen

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"stampede/internal/memnet"
	"stampede/scenarios"
	"stampede/workload"
)

// TestDriverClientTimeoutAbandons plays, in fake time over memnet, two
// closed users against a server that never answers: one gives up after its
// first client timeout, the other sends again. Each timed-out request has
// the timeout as its latency, exactly, and closes its connection, which
// the server sees.
func TestDriverClientTimeoutAbandons(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := memnet.Listen(memnet.Options{})
		gone := make(chan struct{}, 10)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done() // never answers; notices the client leaving
			gone <- struct{}{}
		})}
		go srv.Serve(ln)
		defer srv.Close()
		one := []scenarios.WeightedRoute{{Route: 0, Weight: 1}}
		tenants := []scenarios.Tenant{
			{Index: 0, Name: "giveup", Host: "g", Load: &scenarios.Load{Model: scenarios.Closed, Users: 1, Iterations: 5,
				OnTimeout: scenarios.GiveUp, ClientTimeout: 100 * time.Millisecond, Routes: one}},
			{Index: 1, Name: "retry", Host: "r", Load: &scenarios.Load{Model: scenarios.Closed, Users: 1, Iterations: 1,
				OnTimeout: scenarios.Retry, ClientTimeout: 300 * time.Millisecond, Think: 100 * time.Millisecond, Routes: one}},
		}
		d := memDriver(t, ln, nil, DriverOptions{Tenants: tenants, Horizon: 1300 * time.Millisecond})
		var sink resultSink
		if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
			t.Fatal(err)
		}
		per := [2]int{}
		for _, r := range sink.got {
			per[r.Tenant]++
			if r.Outcome != workload.ClientTimeout {
				t.Errorf("result %+v: want client timeout", r)
			}
			if want := tenants[r.Tenant].Load.ClientTimeout; r.Latency != want {
				t.Errorf("tenant %d: latency %v, want %v", r.Tenant, r.Latency, want)
			}
		}
		// give_up: one request, then the user stops. retry: every 300 ms
		// plus MinResend (250 ms, longer than its think time) of a 1.3 s
		// horizon, sending at 0, 550 ms and 1.1 s (the same iteration).
		if per[0] != 1 || per[1] != 3 {
			t.Errorf("client timeouts: got give_up %d, retry %d; want 1 and 3", per[0], per[1])
		}
		for i := range 4 {
			select {
			case <-gone:
			case <-time.After(5 * time.Second):
				t.Fatalf("server saw %d clients leave, want 4: timed-out requests must close their connection", i)
			}
		}
	})
}
