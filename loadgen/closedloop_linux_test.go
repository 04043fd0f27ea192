package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"stampede/scenarios"
	"stampede/workload"
)

// loopTests, when on, makes newDriver ask for precise timers, so that the
// driver plays closed-model users on event loops where canLoop lets it,
// and keeps the drivers it made.
var loopTests struct {
	on      bool
	drivers []*Driver
}

// TestLoopsPassDriverTests runs the driver's tests over loopback TCP with
// the closed-model users on event loops, and checks that they ran there.
func TestLoopsPassDriverTests(t *testing.T) {
	loopTests.on = true
	defer func() { loopTests.on, loopTests.drivers = false, nil }()
	for _, c := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"ClosedExactCounts", TestDriverClosedExactCounts},
		{"StatusOutcomes", TestDriverStatusOutcomes},
		{"TransportErrorIsError", TestDriverTransportErrorIsError},
		{"SourceAddresses", TestDriverSourceAddresses},
		{"AddressPool", TestDriverAddressPool},
		{"DrainCutsOffAsClientTimeout", TestDriverDrainCutsOffAsClientTimeout},
		{"CancelReturnsPromptly", TestDriverCancelReturnsPromptly},
		{"WorkFromServiceHeader", TestDriverWorkFromServiceHeader},
		{"TareByOutcome", TestDriverTareByOutcome},
		{"TareNeverBelowZero", TestDriverTareNeverBelowZero},
		{"SetTareWhileRunning", TestDriverSetTareWhileRunning},
	} {
		loopTests.drivers = nil
		t.Run(c.name, c.f)
		looped := 0
		for _, d := range loopTests.drivers {
			looped += d.looped
		}
		if looped == 0 {
			t.Errorf("%s: no user ran on an event loop", c.name)
		}
	}
}

// rawServer is a loopback HTTP/1.1 server of the test's own that answers
// each request by its path with the bytes answer gives, written in the
// pieces it gives them, a millisecond apart, and then closes the
// connection when close says so. It counts the connections it accepted.
type rawServer struct {
	ln    net.Listener
	conns atomic.Int64
	wg    sync.WaitGroup
}

func newRawServer(t *testing.T, answer func(path string) (pieces []string, close bool)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln}
	var open sync.Map
	t.Cleanup(func() {
		ln.Close()
		open.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		s.wg.Wait()
	})
	s.wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			open.Store(nc, nil)
			s.wg.Go(func() {
				defer nc.Close()
				defer open.Delete(nc)
				br := bufio.NewReader(nc)
				for {
					line, err := readRequestHead(br)
					if err != nil {
						return
					}
					f := strings.Fields(line)
					if len(f) < 2 {
						return
					}
					pieces, closing := answer(f[1])
					for i, p := range pieces {
						if i > 0 {
							time.Sleep(time.Millisecond)
						}
						if _, err := nc.Write([]byte(p)); err != nil {
							return
						}
					}
					if closing {
						if f[1] == "/reset" {
							nc.(*net.TCPConn).SetLinger(0)
						}
						return
					}
				}
			})
		}
	})
	return s
}

// TestLoopConnections plays users on the loops against a server that
// answers in pieces, closes connections after its answer with and without
// saying so, resets them, answers what cannot be parsed or never
// answers, and holds every request's outcome, and the connections the
// server saw, to what they must be.
func TestLoopConnections(t *testing.T) {
	const body = "0123456789"
	chunked := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n0123\r\n6\r\n456789\r\n0\r\n\r\n"
	srv := newRawServer(t, func(path string) ([]string, bool) {
		length := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		switch path {
		case "/keep":
			return []string{length}, false
		case "/close":
			return []string{fmt.Sprintf("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)}, true
		case "/idleclose":
			// Kept alive by its words, closed at once: the next request
			// finds it closed while idle, and is sent on a new one.
			return []string{length}, true
		case "/split":
			// Cut in the status line, the head and the body.
			return []string{length[:5], length[5:20], length[20 : len(length)-4], length[len(length)-4:]}, false
		case "/chunked":
			return []string{chunked[:30], chunked[30:52], chunked[52:60], chunked[60:]}, false
		case "/toend":
			return []string{"HTTP/1.1 200 OK\r\n\r\n", "to the end"}, true
		case "/unavailable":
			return []string{"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"}, false
		case "/badgateway":
			return []string{"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n"}, false
		case "/gatewaytimeout":
			return []string{"HTTP/1.1 504 Gateway Timeout\r\nContent-Length: 0\r\n\r\n"}, false
		case "/notfound":
			return []string{"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"}, false
		case "/garbage":
			return []string{"HTTP/1.1 2x0 OK\r\n\r\n"}, true
		case "/reset":
			return nil, true
		case "/never":
			return []string{"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nnot all"}, false
		}
		return nil, true
	})
	const users, iterations = 2, 3
	cases := []struct {
		path  string
		want  workload.Outcome
		n     int // results per user
		conns int // connections the server sees, at least
		most  int // and at most
	}{
		{"/keep", workload.OK, iterations, users, users},
		{"/close", workload.OK, iterations, users * iterations, users * iterations},
		{"/idleclose", workload.OK, iterations, users * iterations, users * iterations},
		{"/split", workload.OK, iterations, users, users},
		{"/chunked", workload.OK, iterations, users, users},
		{"/toend", workload.OK, iterations, users * iterations, users * iterations},
		{"/unavailable", workload.Rejected, iterations, users, users},
		{"/badgateway", workload.BackendError, iterations, users, users},
		{"/gatewaytimeout", workload.GatewayTimeout, iterations, users, users},
		{"/notfound", workload.Error, iterations, users, users},
		{"/garbage", workload.Error, iterations, users * iterations, users * iterations},
		{"/reset", workload.Error, iterations, users * iterations, users * iterations},
		{"/never", workload.ClientTimeout, 1, users, users},
	}
	var routes []scenarios.Route
	var tenants []scenarios.Tenant
	for i, c := range cases {
		routes = append(routes, scenarios.Route{Name: c.path, Path: c.path})
		load := &scenarios.Load{Model: scenarios.Closed, Users: users, Iterations: iterations, Routes: []scenarios.WeightedRoute{{Route: i, Weight: 1}}}
		if c.want == workload.ClientTimeout {
			load.ClientTimeout, load.OnTimeout = 500*time.Millisecond, scenarios.GiveUp
		}
		tenants = append(tenants, scenarios.Tenant{Index: i, Name: c.path, Host: "h", Load: load})
	}
	d, err := NewDriver(DriverOptions{Target: mustURL(t, "http://"+srv.ln.Addr().String()), Routes: routes, Tenants: tenants,
		PreciseTimers: true, Horizon: time.Minute, TimeScale: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	var sink resultSink
	if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
		t.Fatal(err)
	}
	if d.looped != users*len(cases) {
		t.Fatalf("%d users on event loops, want all %d", d.looped, users*len(cases))
	}
	per := make([]int, len(cases))
	for _, r := range sink.got {
		c := cases[r.Tenant]
		per[r.Tenant]++
		if r.Outcome != c.want {
			t.Errorf("%s: result %+v, want %v", c.path, r, c.want)
		}
		if r.Outcome == workload.ClientTimeout && r.Latency < 500*time.Millisecond {
			t.Errorf("%s: client timeout after %v, want at least the 500ms timeout", c.path, r.Latency)
		}
	}
	for i, c := range cases {
		if per[i] != users*c.n {
			t.Errorf("%s: %d results, want %d", c.path, per[i], users*c.n)
		}
	}
	if p := d.Progress(); p.InFlight != 0 || p.Sent != uint64(len(sink.got)) {
		t.Errorf("progress %+v, want none in flight and %d sent", p, len(sink.got))
	}
	// Connections: one tenant at a time, to count each one's.
	for i, c := range cases {
		one := []scenarios.Tenant{tenants[i]}
		one[0].Index = 0
		before := srv.conns.Load()
		d, err := NewDriver(DriverOptions{Target: mustURL(t, "http://"+srv.ln.Addr().String()), Routes: routes, Tenants: one,
			PreciseTimers: true, Horizon: time.Minute, TimeScale: 0.1})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Run(context.Background(), time.Now(), &resultSink{}); err != nil {
			t.Fatal(err)
		}
		if n := int(srv.conns.Load() - before); n < c.conns || n > c.most {
			t.Errorf("%s: the server saw %d connections, want %d..%d", c.path, n, c.conns, c.most)
		}
	}
}

// TestLoopLatencyFromSend plays users whose answers take 200 µs, with the
// pacer aiming as early as it may: the sends that wait for MinCycle go out
// before their intended time, and each latency must still cover the
// server's hold (counted from the send, not the later intended time) and
// no more than until the sink had the result (counted from no later than
// the intended time).
func TestLoopLatencyFromSend(t *testing.T) {
	const hold = 200 * time.Microsecond
	srv := httptest.NewServer(waitHandler(hold, 200))
	defer srv.Close()
	d, err := NewDriver(DriverOptions{Target: mustURL(t, srv.URL), Routes: testRoutes, Tenants: closedLoad(2, 200, 0, 0),
		PreciseTimers: true, Horizon: time.Minute, TimeScale: 1})
	if err != nil {
		t.Fatal(err)
	}
	for range 300 {
		d.pacer.Observe(time.Millisecond)
	}
	sink, start := runTimed(t, d)
	if d.looped != 2 || len(sink.got) != 400 {
		t.Fatalf("%d users on loops, %d results; want 2 and 400", d.looped, len(sink.got))
	}
	early := 0
	for i, r := range sink.got {
		if r.Outcome != workload.OK {
			t.Fatalf("result %d: %v, want ok", i, r.Outcome)
		}
		if r.Late < 0 {
			early++
		}
		// The sink had it after this long from the intended time; the
		// latency counts from up to -Late (truncated to µs) before it.
		seen := r.at.Sub(start.Add(r.Intended))
		hi := seen + max(-time.Duration(r.Late)*time.Microsecond, 0) + time.Microsecond
		if r.Latency < hold || r.Latency > hi {
			t.Errorf("result %d (sent %d µs late): latency %v, want between the %v hold and %v", i, r.Late, r.Latency, hold, hi)
		}
	}
	if early == 0 {
		t.Skip("no send came early: the early case was not exercised")
	}
	t.Logf("%d of 400 sends early", early)
}

// loopUsers makes the event loops' users of d's closed-model tenants, as
// Run does.
func loopUsers(d *Driver) []*loopUser {
	var users []*loopUser
	for _, t := range d.tenants {
		for u := range t.load.Users {
			rng := rand.New(rand.NewPCG(d.opts.Seed, stream(t.index, u+1)))
			users = append(users, &loopUser{t: t, rng: rng, from: t.visitorFrom(u), rt: t.visitor(u), gets: t.gets})
		}
	}
	return users
}

// TestLoopSendAfterSinkWait holds the loop on its handing of each result
// to the sink, as a full channel does, before it takes the next: the user's
// next send, due when the answer came, goes out only once the result is
// taken, and its lateness must say so (it was taken at least as late as
// the receive began).
func TestLoopSendAfterSinkWait(t *testing.T) {
	srv := httptest.NewServer(waitHandler(time.Millisecond, 200))
	defer srv.Close()
	const scale = 0.01 // MinCycle is 5 µs: each next send is due at its answer
	d, err := NewDriver(DriverOptions{Target: mustURL(t, srv.URL), Routes: testRoutes, Tenants: closedLoad(1, 4, 0, 0),
		PreciseTimers: true, Horizon: time.Hour, TimeScale: scale})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"loop", "goroutine"} {
		out := make(chan workload.Result) // unbuffered: each hand-off waits for the receive
		start := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			users := loopUsers(d)
			if path == "loop" {
				d.runLoops(context.Background(), start, users, out)
				return
			}
			u := users[0]
			d.user(context.Background(), start, u.t, u.rt, u.rng, out)
		}()
		var got []workload.Result
		var taken []time.Time // when each receive began
		for len(got) < 4 {
			time.Sleep(20 * time.Millisecond)
			taken = append(taken, time.Now())
			got = append(got, <-out)
		}
		<-done
		for i := 1; i < len(got); i++ {
			r := got[i]
			// The send came after the receive of the result before it began.
			least := taken[i-1].Sub(start.Add(wallOf(r.Intended, scale))) - roundoff
			if late := time.Duration(r.Late) * time.Microsecond; r.Outcome != workload.OK || late < least-time.Microsecond {
				t.Errorf("%s: result %d: %v, sent %v late; want ok, at least %v late (its result before was taken then)", path, i, r.Outcome, late, least)
			}
		}
	}
}

// hungListener returns the address of a listener that never accepts and
// whose queue is full: a connect to it waits for a SYN-ACK that does not
// come (its SYNs are dropped, as a full backlog's are), until it gives up.
func hungListener(t *testing.T) string {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*unix.SockaddrInet4).Port)
	// The one connection a backlog of 0 queues fills it.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return addr
}

// TestLoopConnectTimeout plays a user whose connect never completes, with a
// client timeout longer than the driver's bound on a connect: on the loop
// as on a goroutine, the request ends when the connect gives up, a client
// timeout, not at the client timeout.
func TestLoopConnectTimeout(t *testing.T) {
	defer func(d time.Duration) { dialTimeout = d }(dialTimeout)
	dialTimeout = 100 * time.Millisecond
	const clientTimeout = 2 * time.Second
	target := "http://" + hungListener(t)
	for _, path := range []string{"loop", "goroutine"} {
		d, err := NewDriver(DriverOptions{Target: mustURL(t, target), Routes: testRoutes, Tenants: closedLoad(1, 1, 0, clientTimeout),
			PreciseTimers: path == "loop", Horizon: time.Minute, TimeScale: 1})
		if err != nil {
			t.Fatal(err)
		}
		var sink resultSink
		if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
			t.Fatal(err)
		}
		if d.looped != map[string]int{"loop": 1, "goroutine": 0}[path] {
			t.Fatalf("%s: %d users on loops", path, d.looped)
		}
		if len(sink.got) != 1 {
			t.Fatalf("%s: %d results, want 1", path, len(sink.got))
		}
		r := sink.got[0]
		if r.Outcome != workload.ClientTimeout || r.Latency < dialTimeout || r.Latency >= clientTimeout {
			t.Errorf("%s: %v after %v, want a client timeout after the %v connect bound, before the %v client timeout", path, r.Outcome, r.Latency, dialTimeout, clientTimeout)
		}
	}
}

// TestLoopConnectWithAnswer gives a loop one event for a connect that
// completed, the answer that came on it at once and the server's end of
// its side (which keeps reading), as epoll reports them together when the
// loop was busy meanwhile: the edge will not come again, so the loop must
// read the answer then.
func TestLoopConnectWithAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sent := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			close(sent)
			return
		}
		defer c.Close()
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		c.(*net.TCPConn).CloseWrite()
		close(sent)
		io.Copy(io.Discard, c) // the request, then the client's end
	})
	d, err := NewDriver(DriverOptions{Target: mustURL(t, "http://"+ln.Addr().String()), Routes: testRoutes, Tenants: closedLoad(1, 1, 0, 0),
		PreciseTimers: true, Horizon: time.Minute, TimeScale: 1})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan workload.Result, 1)
	l := &loop{d: d, ctx: context.Background(), start: time.Now(), out: out}
	if l.ep, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(l.ep)
	l.to, l.family = d.loopSockaddr()
	u := loopUsers(d)[0]
	u.hi, u.started = -1, true
	l.users, l.active = []*loopUser{u}, 1
	defer l.closeAll()
	l.send(u, time.Now())
	if u.c == nil {
		t.Fatalf("no connection after the send")
	}
	<-sent
	// The server's end has come once poll, which leaves epoll's edges
	// alone, sees it.
	fds := []unix.PollFd{{Fd: int32(u.c.fd), Events: unix.POLLRDHUP}}
	if n, err := unix.Poll(fds, 5000); n != 1 || err != nil {
		t.Fatalf("poll: %d, %v; want the server's end", n, err)
	}
	n, err := l.wait(5 * time.Second)
	if err != nil || n != 1 {
		t.Fatalf("wait: %d events, %v; want 1", n, err)
	}
	if ev := l.events[0].Events; ev&unix.EPOLLOUT == 0 || ev&unix.EPOLLRDHUP == 0 {
		t.Fatalf("event %#x, want the connect's EPOLLOUT with EPOLLRDHUP", ev)
	}
	l.event(u, l.events[0].Events)
	select {
	case r := <-out:
		if r.Outcome != workload.OK {
			t.Errorf("result %+v, want ok", r)
		}
	default:
		t.Errorf("no result after the event that brought the connect, the answer and the server's end")
	}
}

// TestLoopFailingAtOnceShares plays, on one loop, a user whose every
// connect fails at once (its source address is not this machine's, so
// bind fails) beside a user whose requests are answered, at a time scale
// where the pacer's lead is longer than the wait after an error, so that a
// failed request's next is due as it fails (until the user is a lead
// ahead of its intended times): each ends as an error, as on goroutines,
// and the second user is served meanwhile.
func TestLoopFailingAtOnceShares(t *testing.T) {
	srv := httptest.NewServer(waitHandler(0, 200))
	defer srv.Close()
	const scale = 0.001 // MinResend is 250 µs of wall time, under MaxLead
	tenants := closedLoad(1, 0, 0, 0)
	tenants[0].Name, tenants[0].Addr = "failing", "192.0.2.1"
	ok := closedLoad(1, 0, 0, 0)[0]
	ok.Index, ok.Name = 1, "answered"
	tenants = append(tenants, ok)
	for _, path := range []string{"loop", "goroutine"} {
		d, err := NewDriver(DriverOptions{Target: mustURL(t, srv.URL), Routes: testRoutes, Tenants: tenants,
			PreciseTimers: path == "loop", Horizon: 100 * time.Second, TimeScale: scale})
		if err != nil {
			t.Fatal(err)
		}
		for range 300 {
			d.pacer.Observe(time.Millisecond) // the lead at its most
		}
		var sink resultSink
		if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
			t.Fatal(err)
		}
		per := map[int32]map[workload.Outcome]int{0: {}, 1: {}}
		for _, r := range sink.got {
			per[r.Tenant][r.Outcome]++
		}
		t.Logf("%s: failing %v, answered %v", path, per[0], per[1])
		if per[0][workload.Error] == 0 || len(per[0]) != 1 {
			t.Errorf("%s: the failing user's outcomes %v, want errors only", path, per[0])
		}
		// Thousands come in 100 ms; one would if the failing user kept the
		// loop to itself.
		if n := per[1][workload.OK]; n < 10 || len(per[1]) != 1 {
			t.Errorf("%s: the answered user's outcomes %v, want at least 10 ok and nothing else", path, per[1])
		}
	}
}

// TestLoopHeap pushes, moves and removes users in a loop's heap at random
// and checks after every step that each knows its place and that the
// earliest is on top.
func TestLoopHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	l := &loop{}
	users := make([]*loopUser, 50)
	for i := range users {
		users[i] = &loopUser{hi: -1}
	}
	for step := range 20000 {
		u := users[rng.IntN(len(users))]
		if rng.IntN(3) == 0 {
			l.remove(u)
		} else {
			l.push(u, rng.Int64N(1000))
		}
		in := 0
		for _, v := range users {
			if v.hi < 0 {
				continue
			}
			in++
			if l.heap[v.hi] != v {
				t.Fatalf("step %d: a user's place %d holds another", step, v.hi)
			}
			if v.key < l.heap[0].key {
				t.Fatalf("step %d: key %d under the top's %d", step, v.key, l.heap[0].key)
			}
		}
		if in != len(l.heap) {
			t.Fatalf("step %d: %d users placed, %d in the heap", step, in, len(l.heap))
		}
		for i := 1; i < len(l.heap); i++ {
			if p := (i - 1) / 2; l.heap[p].key > l.heap[i].key {
				t.Fatalf("step %d: heap order broken at %d", step, i)
			}
		}
	}
}

// TestLoopIPv6 plays users on loops and on goroutines against a server on
// IPv6 loopback, with its port in the target.
func TestLoopIPv6(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	srv := httptest.NewUnstartedServer(waitHandler(0, 200))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	for _, path := range []string{"loop", "goroutine"} {
		d, err := NewDriver(DriverOptions{Target: mustURL(t, srv.URL), Routes: testRoutes, Tenants: closedLoad(2, 5, 0, 0),
			PreciseTimers: path == "loop", Horizon: time.Minute, TimeScale: 0.1})
		if err != nil {
			t.Fatal(err)
		}
		var sink resultSink
		if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
			t.Fatal(err)
		}
		if want := map[string]int{"loop": 2, "goroutine": 0}[path]; d.looped != want {
			t.Fatalf("%s: %d users on loops, want %d", path, d.looped, want)
		}
		if n := sink.count(workload.OK); n != 10 || len(sink.got) != 10 {
			t.Errorf("%s: %d ok of %d results, want 10 of 10", path, n, len(sink.got))
		}
	}
}

// TestLoopNoResendAfter1xx plays a user against a server that answers the
// first request on each connection and, to the second, sends a 100
// Continue and closes: a byte of the answer came, so the request ends as
// an error and is not sent again, on the loop as on a goroutine.
func TestLoopNoResendAfter1xx(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ln.Close()
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for n := 0; ; n++ {
					if _, err := readRequestHead(br); err != nil {
						return
					}
					requests.Add(1)
					if n > 0 {
						c.Write([]byte("HTTP/1.1 100 Continue\r\n\r\n"))
						return
					}
					c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
				}
			})
		}
	})
	for _, path := range []string{"loop", "goroutine"} {
		requests.Store(0)
		d, err := NewDriver(DriverOptions{Target: mustURL(t, "http://"+ln.Addr().String()), Routes: testRoutes, Tenants: closedLoad(1, 2, 0, 0),
			PreciseTimers: path == "loop", Horizon: time.Minute, TimeScale: 0.1})
		if err != nil {
			t.Fatal(err)
		}
		var sink resultSink
		if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
			t.Fatal(err)
		}
		if len(sink.got) != 2 || sink.got[0].Outcome != workload.OK || sink.got[1].Outcome != workload.Error || requests.Load() != 2 {
			t.Errorf("%s: results %+v, the server saw %d requests; want ok then an error, 2 requests", path, sink.got, requests.Load())
		}
	}
}

// readRequestHead reads a request head from br up to its empty line and
// returns its request line.
func readRequestHead(br *bufio.Reader) (string, error) {
	line, err := br.ReadString('\n')
	for h := line; err == nil && h != "\r\n"; {
		h, err = br.ReadString('\n')
	}
	return line, err
}
