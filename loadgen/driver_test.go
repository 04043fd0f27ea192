package loadgen

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"stampede/fakebackend"
	"stampede/internal/testproc"
	"stampede/limiterproxy"
	"stampede/scenarios"
	"stampede/workload"
)

// These tests run real HTTP over loopback, so they run in real time; they
// keep to a few hundred milliseconds each and assert counts, not timings.

// resultSink is a sink that keeps every result; the driver calls it from one
// goroutine, and the test reads it after Run returned.
type resultSink struct {
	got   []workload.Result
	onAdd func(*workload.Result) // called after appending, from the sink goroutine
}

func (c *resultSink) Add(r *workload.Result) {
	c.got = append(c.got, *r)
	if c.onAdd != nil {
		c.onAdd(r)
	}
}

func (c *resultSink) count(o workload.Outcome) int {
	n := 0
	for _, r := range c.got {
		if r.Outcome == o {
			n++
		}
	}
	return n
}

var testRoutes = []scenarios.Route{{Name: "a", Path: "/a"}, {Name: "b", Path: "/b"}}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func newDriver(t *testing.T, target string, opts DriverOptions) *Driver {
	t.Helper()
	opts.Target = mustURL(t, target)
	if loopTests.on {
		// Run on the event loops where they can play it (canLoop).
		opts.PreciseTimers = true
	}
	if opts.Routes == nil {
		opts.Routes = testRoutes
	}
	d, err := NewDriver(opts)
	if err != nil {
		t.Fatalf("NewDriver: %v", err)
	}
	if loopTests.on {
		loopTests.drivers = append(loopTests.drivers, d)
	}
	return d
}

// arrivalsOf counts what NewArrivals yields for load: the driver must send
// (or drop) exactly that many.
func arrivalsOf(load *scenarios.Load, horizon time.Duration, seed uint64, tenant int) int {
	a := workload.NewArrivals(load, horizon, workload.TenantRand(seed, tenant))
	n := 0
	for {
		if _, ok := a.Next(); !ok {
			return n
		}
		n++
	}
}

func TestDriverClosedExactCounts(t *testing.T) {
	var mu sync.Mutex
	hosts := map[string]int{}
	paths := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hosts[r.Host]++
		paths[r.URL.Path]++
		mu.Unlock()
	}))
	defer srv.Close()

	load := &scenarios.Load{Model: scenarios.Closed, Users: 3, Iterations: 4,
		Routes: []scenarios.WeightedRoute{{Route: 1, Weight: 1}}}
	d := newDriver(t, srv.URL, DriverOptions{
		Tenants:   []scenarios.Tenant{{Index: 0, Name: "x", Host: "x.example.com", Load: load}},
		Horizon:   time.Second,
		TimeScale: 0.1,
	})
	var sink resultSink
	if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := len(sink.got), 12; got != want {
		t.Fatalf("results: got %d, want %d (3 users × 4 iterations)", got, want)
	}
	if got := sink.count(workload.OK); got != 12 {
		t.Errorf("ok: got %d, want 12", got)
	}
	for i, r := range sink.got {
		if r.Tenant != 0 || r.Route != 1 || r.Status != 200 || r.Latency <= 0 {
			t.Errorf("result %d: got %+v, want tenant 0, route 1, status 200, latency > 0", i, r)
		}
	}
	mu.Lock() // the handlers' writes are seen through the kernel's sockets, which the race detector does not see
	if hosts["x.example.com"] != 12 || paths["/b"] != 12 {
		t.Errorf("server saw hosts %v paths %v, want 12 of x.example.com on /b", hosts, paths)
	}
	mu.Unlock()
	p := d.Progress()
	if p.Sent != 12 || p.Outcomes[workload.OK] != 12 || len(sink.got) != 12 || p.InFlight != 0 {
		t.Errorf("progress: got %+v, want 12 sent, 12 ok, none in flight", p)
	}
	if l := d.SendLateness(); l.Sends != 12 || l.Early > l.Sends || l.P50 > l.P99 || l.P99 > l.Max {
		t.Errorf("send lateness: got %+v, want 12 sends in order p50 ≤ p99 ≤ max", l)
	}
}

func TestDriverStatusOutcomes(t *testing.T) {
	// Route a answers by the Host header: tenants stand for the statuses.
	// "marked-" hosts carry the limiter's header, as the built-in proxy's
	// answers do, here with a limit status of 502.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, marked := strings.CutPrefix(r.Host, "marked-")
		if marked {
			w.Header().Set(limiterproxy.LimitHeader, "limit_conn[0] $host")
		}
		switch host {
		case "ok":
			w.WriteHeader(200)
		case "limited":
			w.WriteHeader(503)
		case "teapot":
			w.WriteHeader(429)
		case "bad-gateway":
			w.WriteHeader(502)
		case "gateway-timeout":
			w.WriteHeader(504)
		case "redirect":
			w.Header().Set("Location", "/elsewhere")
			w.WriteHeader(302)
		}
	}))
	defer srv.Close()
	hosts := []string{"ok", "limited", "teapot", "bad-gateway", "gateway-timeout", "redirect", "marked-bad-gateway"}
	for _, marked := range []bool{false, true} {
		// By status, 503 and 429 are the limits' and 502 the upstream's;
		// with marked rejections only the mark counts, so a limit
		// answering 502 is told from the upstream's 502.
		want := []workload.Outcome{workload.OK, workload.Rejected, workload.Rejected, workload.BackendError, workload.GatewayTimeout, workload.OK, workload.Rejected}
		if marked {
			want = []workload.Outcome{workload.OK, workload.Error, workload.Error, workload.BackendError, workload.GatewayTimeout, workload.OK, workload.Rejected}
		}
		var tenants []scenarios.Tenant
		for i, h := range hosts {
			tenants = append(tenants, scenarios.Tenant{Index: i, Name: h, Host: h, Load: &scenarios.Load{
				Model: scenarios.Closed, Users: 1, Iterations: 1, Routes: []scenarios.WeightedRoute{{Route: 0, Weight: 1}}}})
		}
		d := newDriver(t, srv.URL, DriverOptions{Tenants: tenants, Horizon: time.Second, TimeScale: 0.1,
			RejectStatuses: []int{503, 429}, MarkedRejections: marked})
		var sink resultSink
		if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
			t.Fatal(err)
		}
		if len(sink.got) != len(hosts) {
			t.Fatalf("marked %v: results: got %d, want %d", marked, len(sink.got), len(hosts))
		}
		for _, r := range sink.got {
			if r.Outcome != want[r.Tenant] {
				t.Errorf("marked %v: tenant %s (status %d): got %v, want %v", marked, hosts[r.Tenant], r.Status, r.Outcome, want[r.Tenant])
			}
		}
	}
}

func TestDriverTransportErrorIsError(t *testing.T) {
	addr := testproc.Refusing(t) // connections are refused
	load := &scenarios.Load{Model: scenarios.Closed, Users: 2, Iterations: 3, Routes: []scenarios.WeightedRoute{{Route: 0, Weight: 1}}}
	d := newDriver(t, "http://"+addr, DriverOptions{
		Tenants: []scenarios.Tenant{{Name: "x", Host: "x", Load: load}}, Horizon: time.Second, TimeScale: 0.1})
	var sink resultSink
	if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
		t.Fatal(err)
	}
	if got := sink.count(workload.Error); got != 6 || len(sink.got) != 6 {
		t.Errorf("errors: got %d of %d results, want 6 of 6", got, len(sink.got))
	}
	for _, r := range sink.got {
		if r.Status != 0 {
			t.Errorf("status of a refused connection: got %d, want 0", r.Status)
		}
	}
}

func TestDriverSourceAddresses(t *testing.T) {
	var mu sync.Mutex
	from := map[string]string{} // host → remote IP
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip, _, _ := net.SplitHostPort(r.RemoteAddr)
		mu.Lock()
		from[r.Host] = ip
		mu.Unlock()
	}))
	defer srv.Close()
	one := []scenarios.WeightedRoute{{Route: 0, Weight: 1}}
	tenants := []scenarios.Tenant{
		{Index: 0, Name: "a", Host: "a", Addr: "127.0.0.2", Load: &scenarios.Load{Model: scenarios.Closed, Users: 1, Iterations: 2, Routes: one}},
		{Index: 1, Name: "b", Host: "b", Addr: "127.0.0.3", Load: &scenarios.Load{Model: scenarios.Closed, Users: 1, Iterations: 2, Routes: one}},
		{Index: 2, Name: "c", Host: "c", Load: &scenarios.Load{Model: scenarios.Closed, Users: 1, Iterations: 2, Routes: one}},
	}
	d := newDriver(t, srv.URL, DriverOptions{Tenants: tenants, Horizon: time.Second, TimeScale: 0.1})
	var sink resultSink
	if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
		t.Fatal(err)
	}
	if got := sink.count(workload.OK); got != 6 {
		t.Fatalf("ok: got %d, want 6 (results %+v)", got, sink.got)
	}
	want := map[string]string{"a": "127.0.0.2", "b": "127.0.0.3", "c": "127.0.0.1"}
	mu.Lock()
	defer mu.Unlock()
	for h, ip := range want {
		if from[h] != ip {
			t.Errorf("host %s came from %q, want %q", h, from[h], ip)
		}
	}
}

func TestDriverDrainCutsOffAsClientTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	load := &scenarios.Load{Model: scenarios.Closed, Users: 2, Iterations: 1, Routes: []scenarios.WeightedRoute{{Route: 0, Weight: 1}}}
	d := newDriver(t, srv.URL, DriverOptions{Tenants: []scenarios.Tenant{{Name: "x", Host: "x", Load: load}},
		Horizon: 100 * time.Millisecond, TimeScale: 0.1, Drain: 20 * time.Millisecond})
	var sink resultSink
	if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
		t.Fatal(err)
	}
	if got := sink.count(workload.ClientTimeout); got != 2 || len(sink.got) != 2 {
		t.Errorf("client timeouts: got %d of %d results, want 2 of 2", got, len(sink.got))
	}
}

func TestDriverCancelReturnsPromptly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host == "slow" {
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	one := []scenarios.WeightedRoute{{Route: 0, Weight: 1}}
	tenants := []scenarios.Tenant{
		{Index: 0, Name: "fast", Host: "fast", Load: &scenarios.Load{Model: scenarios.Open, Arrivals: scenarios.Constant, Rate: 100, Routes: one}},
		{Index: 1, Name: "slow", Host: "slow", Load: &scenarios.Load{Model: scenarios.Closed, Users: 3, Routes: one}},
	}
	// An hour of model time in real time: only the cancellation ends it.
	d := newDriver(t, srv.URL, DriverOptions{Tenants: tenants, Horizon: time.Hour, TimeScale: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sink := resultSink{}
	sink.onAdd = func(r *workload.Result) {
		if len(sink.got) == 5 {
			cancel()
		}
	}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, time.Now(), &sink) }()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Errorf("Run: got %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
	p := d.Progress()
	if p.Abandoned < 3 {
		t.Errorf("abandoned: got %d, want at least the 3 slow users' requests", p.Abandoned)
	}
	if p.InFlight != 0 {
		t.Errorf("in flight after Run: got %d, want 0", p.InFlight)
	}
	for _, r := range sink.got {
		if r.Tenant != 0 || r.Outcome != workload.OK {
			t.Errorf("recorded %+v: abandoned requests must not be recorded", r)
		}
	}
	if uint64(len(sink.got))+p.Abandoned != p.Sent {
		t.Errorf("sent %d = recorded %d + abandoned %d does not hold", p.Sent, len(sink.got), p.Abandoned)
	}
}

func TestDriverSampleRunsOnSinkGoroutine(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	load := &scenarios.Load{Model: scenarios.Closed, Users: 2, Think: 50 * time.Millisecond, Routes: []scenarios.WeightedRoute{{Route: 0, Weight: 1}}}
	// No lock: the race detector flags Sample and Add running at once.
	var samples, adds int
	var at []time.Duration
	d := newDriver(t, srv.URL, DriverOptions{
		Tenants: []scenarios.Tenant{{Name: "x", Host: "x", Load: load}}, Horizon: time.Second, TimeScale: 0.1,
		SampleEvery: 5 * time.Millisecond,
		Sample:      func(a time.Duration) { samples++; at = append(at, a) },
	})
	if err := d.Run(context.Background(), time.Now(), workload.SinkFunc(func(*workload.Result) { adds++ })); err != nil {
		t.Fatal(err)
	}
	if samples < 5 || adds < 10 {
		t.Errorf("got %d samples and %d results in 100 ms, want at least 5 and 10", samples, adds)
	}
	for i := 1; i < len(at); i++ {
		if at[i] <= at[i-1] {
			t.Errorf("sample %d at %v, not after %v", i, at[i], at[i-1])
		}
	}
}

func TestNewDriverErrors(t *testing.T) {
	one := []scenarios.WeightedRoute{{Route: 0, Weight: 1}}
	tests := []struct {
		name string
		opts DriverOptions
	}{
		{"no target", DriverOptions{}},
		{"https", DriverOptions{Target: mustURL(t, "https://127.0.0.1:1")}},
		{"negative scale", DriverOptions{Target: mustURL(t, "http://127.0.0.1:1"), TimeScale: -1}},
		{"negative tare", DriverOptions{Target: mustURL(t, "http://127.0.0.1:1"), Tare: -time.Millisecond}},
		{"no load", DriverOptions{Target: mustURL(t, "http://127.0.0.1:1"), Tenants: []scenarios.Tenant{{Name: "x"}}}},
		{"route out of range", DriverOptions{Target: mustURL(t, "http://127.0.0.1:1"), Routes: testRoutes,
			Tenants: []scenarios.Tenant{{Name: "x", Load: &scenarios.Load{Routes: []scenarios.WeightedRoute{{Route: 2, Weight: 1}}}}}}},
		{"bad address", DriverOptions{Target: mustURL(t, "http://127.0.0.1:1"), Routes: testRoutes,
			Tenants: []scenarios.Tenant{{Name: "x", Addr: "nat.example", Load: &scenarios.Load{Routes: one}}}}},
	}
	for i, tt := range tests {
		if _, err := NewDriver(tt.opts); err == nil {
			t.Errorf("step %d (%s): NewDriver returned no error", i, tt.name)
		}
	}
}

// BenchmarkDriverClosed64 measures the driver's request rate: 64 closed-model
// users with no think time against an in-process endpoint that answers 200
// at once, or against STAMPEDE_BENCH_TARGET when set (bench/loadgen.sh points
// it at nginx). b.N requests in all.
func BenchmarkDriverClosed64(b *testing.B) {
	target := benchTarget(b)
	const users = 64
	iters := max(b.N/users, 1)
	load := &scenarios.Load{Model: scenarios.Closed, Users: users, Iterations: iters, Routes: []scenarios.WeightedRoute{{Route: 0, Weight: 1}}}
	d, err := NewDriver(DriverOptions{
		Target:  target,
		Routes:  []scenarios.Route{{Name: "hello", Path: "/"}},
		Tenants: []scenarios.Tenant{{Name: "bench", Host: "bench.example.com", Load: load}},
		Horizon: 24 * time.Hour,
	})
	if err != nil {
		b.Fatal(err)
	}
	var ok, other int
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	if err := d.Run(context.Background(), start, workload.SinkFunc(func(r *workload.Result) {
		if r.Outcome == workload.OK {
			ok++
		} else {
			other++
		}
	})); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if other > 0 {
		b.Fatalf("%d of %d requests not ok", other, ok+other)
	}
	b.ReportMetric(float64(ok)/time.Since(start).Seconds(), "req/s")
}

// benchTarget returns STAMPEDE_BENCH_TARGET, or the URL of an in-process
// server that answers 200 with a short body.
func benchTarget(b *testing.B) *url.URL {
	if s := os.Getenv("STAMPEDE_BENCH_TARGET"); s != "" {
		u, err := url.Parse(s)
		if err != nil {
			b.Fatalf("STAMPEDE_BENCH_TARGET: %v", err)
		}
		return u
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	}))
	b.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u
}

func TestDriverWorkFromServiceHeader(t *testing.T) {
	// Tenants stand for what the target answers: the fake backend's
	// service header on 200s in its two spellings, a bad one, none, and
	// the header on answers that are not ok (ignored).
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, service, _ := strings.Cut(r.Host, "-")
		if service != "" {
			w.Header().Set(fakebackend.HeaderService, service)
		}
		code, _ := strconv.Atoi(status)
		w.WriteHeader(code)
	}))
	defer srv.Close()
	for i, tc := range []struct {
		host string
		want time.Duration
	}{
		{"200-2m", 2 * time.Minute},
		{"200-31.2ms", 31200 * time.Microsecond},
		{"200-0s", 0},
		{"200", 0},
		{"200-fast", 0},
		{"200--1s", 0},
		{"503-2s", 0},
		{"502-2s", 0},
	} {
		load := &scenarios.Load{Model: scenarios.Closed, Users: 1, Iterations: 1, Routes: []scenarios.WeightedRoute{{Route: 0, Weight: 1}}}
		d := newDriver(t, srv.URL, DriverOptions{
			Tenants: []scenarios.Tenant{{Name: tc.host, Host: tc.host, Load: load}}, Horizon: time.Second, TimeScale: 0.1})
		var sink resultSink
		if err := d.Run(context.Background(), time.Now(), &sink); err != nil {
			t.Fatal(err)
		}
		if len(sink.got) != 1 {
			t.Fatalf("step %d: %s: got %d results, want 1", i+1, tc.host, len(sink.got))
		}
		// The header is model time already: the time scale does not apply.
		if r := sink.got[0]; r.Work != tc.want {
			t.Errorf("step %d: %s: got %v with Work %v, want %v", i+1, tc.host, r.Outcome, r.Work, tc.want)
		}
	}
}

func FuzzServiceOf(f *testing.F) {
	for _, s := range []string{"2m", "31.2ms", "1h2m3.5s", "0s", "-1s", "", "fast", "9223372036s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := serviceOf([]string{s})
		if d < 0 {
			t.Fatalf("serviceOf(%q) = %v, want no negative work", s, d)
		}
		if want, err := time.ParseDuration(s); err == nil && want >= 0 && d != want {
			t.Fatalf("serviceOf(%q) = %v, want %v", s, d, want)
		}
	})
}
