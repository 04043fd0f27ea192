package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"stampede/internal/memnet"
	"stampede/scenarios"
	"stampede/workload"
)

// TestOpenSendsNeverWait plays an open load of 20 requests a second for 10
// s at time scale 1 against servers that hold every request (a backend
// that queues them all), in fake time over memnet, and holds the driver to
// the open model: every send goes out at its intended time, whether the
// server answers or not and whether a connection is free, refused, or
// still connecting (a full accept queue that retries on the SYN schedule).
// In fake time any wait before a send would show as lateness.
func TestOpenSendsNeverWait(t *testing.T) {
	for _, c := range []struct {
		name    string
		backlog int // of the target's accept queue; Accept is never called when negative
		accept  bool
	}{
		{"server holds every request", 0, true},
		{"accept queue full, SYNs retried", 4, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ln := memnet.Listen(memnet.Options{Backlog: c.backlog})
				hold := make(chan struct{})
				srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					select {
					case <-hold:
					case <-r.Context().Done():
					}
				})}
				done := make(chan struct{})
				if c.accept {
					go func() {
						defer close(done)
						srv.Serve(ln)
					}()
				} else {
					close(done)
				}
				load := &scenarios.Load{Model: scenarios.Open, Arrivals: scenarios.Poisson, Rate: 20, Routes: []scenarios.WeightedRoute{{Route: 0, Weight: 1}}, ClientTimeout: 30 * time.Second}
				d := memDriver(t, ln, load, DriverOptions{Horizon: 10 * time.Second, Drain: time.Second})
				var sink resultSink
				if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
					t.Fatalf("Run: %v", err)
				}
				close(hold)
				srv.Close()
				ln.Close()
				<-done
				want := arrivalsOf(load, 10*time.Second, 1, 0)
				if len(sink.got) != want {
					t.Errorf("%d results, want %d arrivals", len(sink.got), want)
				}
				l := d.SendLateness()
				if l.Sends != uint64(want) || l.Max != 0 {
					t.Errorf("send lateness %+v: want %d sends, none late", l, want)
				}
				if s := d.Stalls(); s.Count != 0 {
					t.Errorf("stalls %+v, want none", s)
				}
			})
		})
	}
}

// TestOpenWithoutCap plays an open load with no in-flight cap
// (DriverOptions.MaxInFlight negative), in fake time over memnet, against
// a server that answers at once: every arrival is sent and answered, none
// dropped, and, each answer coming before the next arrival, over one
// connection kept for reuse.
func TestOpenWithoutCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := memnet.Listen(memnet.Options{})
		conns := make(chan net.Conn, 100) // each one the server accepted
		srv := &http.Server{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}),
			ConnState: func(c net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns <- c
				}
			},
		}
		go srv.Serve(ln)
		defer srv.Close()
		load := &scenarios.Load{Model: scenarios.Open, Arrivals: scenarios.Constant, Rate: 20, Routes: []scenarios.WeightedRoute{{Route: 0, Weight: 1}}}
		d := memDriver(t, ln, load, DriverOptions{Horizon: time.Second, MaxInFlight: -1})
		var sink resultSink
		if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
			t.Fatalf("Run: %v", err)
		}
		want := arrivalsOf(load, time.Second, 1, 0)
		if got := sink.count(workload.OK); got != want || len(sink.got) != want {
			t.Errorf("%d results, %d ok, want %d ok (every arrival)", len(sink.got), got, want)
		}
		if n := len(conns); n != 1 {
			t.Errorf("server saw %d connections, want 1 (reused)", n)
		}
	})
}

// memDriver returns a driver of one open-model tenant with load (or of
// opts.Tenants when it has them), at time
// scale 1 and seed 1, whose connections are made over ln, on testRoutes
// unless opts has routes; opts gives the rest.
func memDriver(t *testing.T, ln *memnet.Listener, load *scenarios.Load, opts DriverOptions) *Driver {
	t.Helper()
	opts.Target = mustURL(t, "http://"+ln.Addr().String())
	if opts.Routes == nil {
		opts.Routes = testRoutes
	}
	if opts.Tenants == nil {
		opts.Tenants = []scenarios.Tenant{{Index: 0, Name: "t", Group: "t", Host: "t.example.com", Addr: "10.0.0.1", Load: load}}
	}
	opts.TimeScale, opts.Seed = 1, 1
	opts.Dial = func(ctx context.Context, from netip.Addr) (net.Conn, error) { return ln.Dial(ctx, from) }
	d, err := NewDriver(opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestOpenOutcomes plays open loads, in fake time over memnet, against a
// raw server that answers each request by its path, and holds every
// arrival to its outcome: answers of each kind, a connection closed
// without an answer, an answer that never comes before the client
// timeout (whose latency is the timeout), and a kept connection that the
// server closes when the next request comes, which is sent once more on a
// new one.
func TestOpenOutcomes(t *testing.T) {
	const timeout = 500 * time.Millisecond
	for _, c := range []struct {
		path  string
		want  workload.Outcome
		conns int // the connections the server accepted, of 4 arrivals
	}{
		{"/ok", workload.OK, 1},
		{"/503", workload.Rejected, 1},
		{"/502", workload.BackendError, 1},
		{"/drop", workload.Error, 4},
		{"/hold", workload.ClientTimeout, 4},
		{"/once", workload.OK, 4},
	} {
		t.Run(c.path, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ln := memnet.Listen(memnet.Options{})
				defer ln.Close()
				conns := make(chan net.Conn, 100)
				go func() {
					for {
						nc, err := ln.Accept()
						if err != nil {
							return
						}
						conns <- nc
						go serveRaw(nc)
					}
				}()
				load := &scenarios.Load{Model: scenarios.Open, Arrivals: scenarios.Constant, Rate: 4, ClientTimeout: timeout, Routes: []scenarios.WeightedRoute{{Route: 0, Weight: 1}}}
				d := memDriver(t, ln, load, DriverOptions{Horizon: time.Second, Routes: []scenarios.Route{{Name: "r", Path: c.path}}})
				var sink resultSink
				if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
					t.Fatalf("Run: %v", err)
				}
				if len(sink.got) != 4 || sink.count(c.want) != 4 {
					t.Errorf("results %+v, want 4 %v", sink.got, c.want)
				}
				for _, r := range sink.got {
					if r.Outcome == workload.ClientTimeout && r.Latency != timeout {
						t.Errorf("client timeout after %v, want %v", r.Latency, timeout)
					}
				}
				if n := len(conns); n != c.conns {
					t.Errorf("server accepted %d connections, want %d", n, c.conns)
				}
				for range len(conns) {
					(<-conns).Close()
				}
			})
		})
	}
}

// serveRaw answers the requests on nc by their path: /ok, /503 and /502
// with that status, /drop by closing nc, /hold never (until the client
// closes nc), and /once the first
// on nc only, closing nc when the next comes.
func serveRaw(nc net.Conn) {
	defer nc.Close()
	br := bufio.NewReader(nc)
	for n := 0; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		path := req.URL.Path
		status := 200
		switch path {
		case "/503":
			status = 503
		case "/502":
			status = 502
		case "/drop":
			return
		case "/hold":
			io.Copy(io.Discard, br) // until the client gives up
			return
		case "/once":
			if n > 0 {
				return
			}
		}
		fmt.Fprintf(nc, "HTTP/1.1 %d X\r\nContent-Length: 2\r\n\r\nok", status)
	}
}
