package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"stampede/internal/memnet"
	"stampede/scenarios"
	"stampede/workload"
)

// dialDelay is how long, in fake time, a dial of the pool tests takes:
// a send that waited for one has that much latency more.
const dialDelay = time.Millisecond

// dialLog counts a driver's dials and when the last one began.
type dialLog struct {
	atomic.Int64
	last atomic.Int64 // UnixNano
}

// poolDriver returns a driver of one open-model tenant with load over
// ln, as memDriver does, whose every dial takes dialDelay and counts in
// dials.
func poolDriver(t *testing.T, ln *memnet.Listener, load *scenarios.Load, horizon time.Duration, dials *dialLog) *Driver {
	t.Helper()
	d, err := NewDriver(DriverOptions{
		Target:    mustURL(t, "http://"+ln.Addr().String()),
		Routes:    testRoutes,
		Tenants:   []scenarios.Tenant{{Index: 0, Name: "t", Group: "t", Host: "t.example.com", Addr: "10.0.0.1", Load: load}},
		Horizon:   horizon,
		TimeScale: 1,
		Seed:      1,
		Drain:     time.Second,
		Dial: func(ctx context.Context, from netip.Addr) (net.Conn, error) {
			dials.Add(1)
			dials.last.Store(time.Now().UnixNano())
			select {
			case <-time.After(dialDelay):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return ln.Dial(ctx, from)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// serveUpTo serves the connections ln accepts, answering up to max
// requests on each with 200, the last of them with Connection: close and
// the connection's end, as nginx's keepalive_requests does, which it
// counts in closes (when not nil); max 0 closes each connection at once,
// before any request.
func serveUpTo(ln *memnet.Listener, max int, closes *atomic.Int64) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer nc.Close()
			br := bufio.NewReader(nc)
			for n := 1; n <= max; n++ {
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				closing := ""
				if n == max {
					closing = "Connection: close\r\n"
					closes.Add(1)
				}
				fmt.Fprintf(nc, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n%s\r\nok", closing)
			}
		}()
	}
}

// TestConnectKeepsLines plays constant arrivals at 2000/s for a second, in
// fake time over memnet, against a server that closes a connection after
// its 30th answer (nginx's keepalive_requests), with the lines dialled
// ahead by Connect: lineWindow's sends, 10. Each connection the server
// closes is dialled again in the background while the others carry the
// sends, so every arrival is answered without waiting for a dial (latency
// 0 in fake time, where the answer takes none) and the server accepts
// the 10 and one for each it closed (but perhaps the last, at the end).
func TestConnectKeepsLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := memnet.Listen(memnet.Options{})
		defer ln.Close()
		var closes atomic.Int64
		go serveUpTo(ln, 30, &closes)
		const rate = 2000
		load := &scenarios.Load{Model: scenarios.Open, Arrivals: scenarios.Constant, Rate: rate, Routes: []scenarios.WeightedRoute{{Route: 0, Weight: 1}}}
		var dials dialLog
		d := poolDriver(t, ln, load, time.Second, &dials)
		keep := int(rate * lineWindow.Seconds())
		if got := d.lines[0].keep; got != keep {
			t.Fatalf("lines keep %d, want %d", got, keep)
		}
		d.Connect(context.Background())
		if got := dials.Load(); got != int64(keep) {
			t.Fatalf("Connect dialled %d, want %d", got, keep)
		}
		var sink resultSink
		if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
			t.Fatalf("Run: %v", err)
		}
		want := arrivalsOf(load, time.Second, 1, 0)
		if got := sink.count(workload.OK); got != want || len(sink.got) != want {
			t.Errorf("%d results, %d ok, want %d ok", len(sink.got), got, want)
		}
		for i, r := range sink.got {
			if r.Latency != 0 {
				t.Fatalf("result %d: latency %v, want 0 (a send waited for a dial)", i, r.Latency)
			}
		}
		if closes.Load() < int64(want/30/2) {
			t.Errorf("the server closed %d connections, want about %d", closes.Load(), want/30)
		}
		if got, closed := dials.Load(), closes.Load(); got != int64(keep)+closed && got != int64(keep)+closed-1 {
			t.Errorf("%d dials, want %d: %d ahead and one for each of the %d closes", got, int64(keep)+closed, keep, closed)
		}
		if l := d.SendLateness(); l.Max != 0 {
			t.Errorf("send lateness %+v, want none", l)
		}
	})
}

// TestLinesWithoutConnect plays the same load without Connect: the sends
// of the first dial's time dial their connections and wait for them, and
// once the server closes one, the lines the pool keeps are dialled in the
// background, so that no later send waits for a dial.
func TestLinesWithoutConnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := memnet.Listen(memnet.Options{})
		defer ln.Close()
		go serveUpTo(ln, 30, new(atomic.Int64))
		load := &scenarios.Load{Model: scenarios.Open, Arrivals: scenarios.Constant, Rate: 2000, Routes: []scenarios.WeightedRoute{{Route: 0, Weight: 1}}}
		var dials dialLog
		d := poolDriver(t, ln, load, time.Second, &dials)
		var sink resultSink
		if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
			t.Fatalf("Run: %v", err)
		}
		want := arrivalsOf(load, time.Second, 1, 0)
		if got := sink.count(workload.OK); got != want || len(sink.got) != want {
			t.Errorf("%d results, %d ok, want %d ok", len(sink.got), got, want)
		}
		first := sink.got[0].Intended
		for _, r := range sink.got {
			first = min(first, r.Intended)
		}
		waited := 0
		for _, r := range sink.got {
			if r.Latency == 0 {
				continue
			}
			waited++
			// The first two dial; the third, due when the first dial
			// ends, may too.
			if r.Latency != dialDelay || r.Intended > first+dialDelay {
				t.Errorf("result at %v: latency %v, want 0, or the dial's %v within the first dial", r.Intended, r.Latency, dialDelay)
			}
		}
		if waited < 2 {
			t.Errorf("%d sends waited for a dial, want those of the first millisecond", waited)
		}
		if l := d.lines[0]; len(l.all) != 0 {
			t.Errorf("%d lines left open after Run, want none", len(l.all))
		}
	})
}

// TestSparesNotRedialledInALoop dials lines ahead to a server that closes
// every connection at once, unused: a line that ends young with no answer
// is not dialled again, so the dials stay those made ahead and those the
// two sends of the run make (each once more, as on a connection closed
// while idle), instead of a loop the fake clock would never leave.
func TestSparesNotRedialledInALoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := memnet.Listen(memnet.Options{})
		defer ln.Close()
		go serveUpTo(ln, 0, nil)
		load := &scenarios.Load{Model: scenarios.Open, Arrivals: scenarios.Constant, Rate: 2000, Routes: []scenarios.WeightedRoute{{Route: 0, Weight: 1}}}
		var dials dialLog
		d := poolDriver(t, ln, load, time.Millisecond, &dials)
		d.Connect(context.Background())
		var sink resultSink
		if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if got := sink.count(workload.Error); got != 2 || len(sink.got) != 2 {
			t.Errorf("results %+v, want 2 errors", sink.got)
		}
		if got, most := dials.Load(), int64(10+2*2); got > most {
			t.Errorf("%d dials, want at most %d", got, most)
		}
	})
}

// TestLinesKeep holds the connections each address's lines keep open
// (dial ahead and make good) to lineWindow's sends at the peak rate in
// wall time, shared in proportion when all of them together would pass
// maxKeep.
func TestLinesKeep(t *testing.T) {
	open := func(rate float64, stages ...scenarios.Stage) *scenarios.Load {
		return &scenarios.Load{Model: scenarios.Open, Arrivals: scenarios.Constant, Rate: rate, Stages: stages, Routes: []scenarios.WeightedRoute{{Route: 0, Weight: 1}}}
	}
	tenants := func(n int, load *scenarios.Load) []scenarios.Tenant {
		var ts []scenarios.Tenant
		for i := range n {
			ts = append(ts, scenarios.Tenant{Index: i, Name: fmt.Sprint("t", i), Group: "t", Host: "t.example.com", Addr: fmt.Sprintf("127.0.%d.%d", 1+i/250, 1+i%250), Load: load})
		}
		return ts
	}
	for _, c := range []struct {
		name    string
		tenants []scenarios.Tenant
		scale   float64
		want    int // each address's
	}{
		{"40k/s", tenants(1, open(40000)), 1, 200},
		{"20/s: none ahead", tenants(1, open(20)), 1, 0},
		{"100/s at time scale 0.01", tenants(1, open(100)), 0.01, 50},
		{"the busiest stage's", tenants(1, open(1000, scenarios.Stage{Duration: time.Second, Rate: 4000}, scenarios.Stage{Duration: time.Second, Rate: 2000})), 1, 20},
		{"300 addresses at 10k/s: maxKeep shared", tenants(300, open(10000)), 1, maxKeep / 300},
	} {
		d, err := NewDriver(DriverOptions{Target: mustURL(t, "http://127.0.0.1:1"), Routes: testRoutes, Tenants: c.tenants, Horizon: time.Second, TimeScale: c.scale})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(d.lines) != len(c.tenants) {
			t.Fatalf("%s: %d lines, want one per address, %d", c.name, len(d.lines), len(c.tenants))
		}
		for i, l := range d.lines {
			if l.keep != c.want {
				t.Errorf("%s: address %d keeps %d lines, want %d", c.name, i, l.keep, c.want)
				break
			}
		}
	}
}

// TestIdleLinesOutliveTheClientTimeout plays 100 ms of arrivals at
// 1000/s, 400 ms of none, and 100 ms more, in fake time over memnet,
// against a server that answers each request after 20 ms, with a client
// timeout of 100 ms: the lines the first burst opened idle through the
// pause for longer than the timeout their last requests set, and must
// carry the second burst without a dial.
func TestIdleLinesOutliveTheClientTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := memnet.Listen(memnet.Options{})
		defer ln.Close()
		go func() {
			for {
				nc, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer nc.Close()
					br := bufio.NewReader(nc)
					for {
						if _, err := http.ReadRequest(br); err != nil {
							return
						}
						time.Sleep(20 * time.Millisecond)
						io.WriteString(nc, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
					}
				}()
			}
		}()
		load := &scenarios.Load{Model: scenarios.Open, Arrivals: scenarios.Constant, ClientTimeout: 100 * time.Millisecond,
			Stages: []scenarios.Stage{{Duration: 100 * time.Millisecond, Rate: 1000}, {Duration: 400 * time.Millisecond}, {Duration: 100 * time.Millisecond, Rate: 1000}},
			Routes: []scenarios.WeightedRoute{{Route: 0, Weight: 1}}}
		start := time.Now()
		var dials dialLog
		d := poolDriver(t, ln, load, 600*time.Millisecond, &dials)
		var sink resultSink
		if err := d.Run(context.Background(), start, &sink); err != nil {
			t.Fatalf("Run: %v", err)
		}
		want := arrivalsOf(load, 600*time.Millisecond, 1, 0)
		if got := sink.count(workload.OK); got != want || len(sink.got) != want {
			t.Errorf("%d results, %d ok, want %d ok", len(sink.got), got, want)
		}
		if last := time.Unix(0, dials.last.Load()).Sub(start); dials.Load() == 0 || last >= 200*time.Millisecond {
			t.Errorf("%d dials, the last at %v, want all in the first burst: its lines died idle", dials.Load(), last)
		}
	})
}

// TestNoSparesForAServerThatCloses plays constant arrivals at 2000/s for a
// second against a server that closes every connection after its answer,
// as a gunicorn sync worker does, with lines dialled ahead: the first
// sends take those, and no spare replaces a line that carried a single
// answer (it would idle, and hold a sync worker that accepted it), so the
// dials are one per arrival, as without Connect.
func TestNoSparesForAServerThatCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := memnet.Listen(memnet.Options{})
		defer ln.Close()
		var closes atomic.Int64
		go serveUpTo(ln, 1, &closes)
		load := &scenarios.Load{Model: scenarios.Open, Arrivals: scenarios.Constant, Rate: 2000, Routes: []scenarios.WeightedRoute{{Route: 0, Weight: 1}}}
		var dials dialLog
		d := poolDriver(t, ln, load, time.Second, &dials)
		d.Connect(context.Background())
		var sink resultSink
		if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
			t.Fatalf("Run: %v", err)
		}
		want := arrivalsOf(load, time.Second, 1, 0)
		if got := sink.count(workload.OK); got != want || len(sink.got) != want {
			t.Errorf("%d results, %d ok, want %d ok", len(sink.got), got, want)
		}
		if got := dials.Load(); got != int64(want) {
			t.Errorf("%d dials, want %d, one per arrival", got, want)
		}
		if got := closes.Load(); got != int64(want) {
			t.Errorf("the server closed %d connections after an answer, want %d", got, want)
		}
		ahead := 0 // sends that found a connection open
		for _, r := range sink.got {
			if r.Latency == 0 {
				ahead++
			}
		}
		if keep := d.lines[0].keep; ahead > keep {
			t.Errorf("%d sends found a connection open, want at most the %d dialled ahead", ahead, keep)
		}
	})
}
