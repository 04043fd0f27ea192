package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"stampede/internal/memnet"
	"stampede/scenarios"
	"stampede/workload"
)

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
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		for {
			h, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if h == "\r\n" {
				break
			}
		}
		path := strings.Fields(line)[1]
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
