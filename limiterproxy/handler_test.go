package limiterproxy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"stampede/clock"
	"stampede/limit"

	dto "github.com/prometheus/client_model/go"
)

// stack is a frontend httptest.Server running Handler and NewProxy in front
// of a backend httptest.Server, as net/http/httputil tests them.
type stack struct {
	front, backend *httptest.Server
	policy         *limit.Policy
	metrics        *Metrics
}

func newStack(t *testing.T, cfg limit.Config, upstream http.Handler, popts ProxyOptions) *stack {
	t.Helper()
	p, err := limit.NewPolicy(cfg)
	if err != nil {
		t.Fatalf("NewPolicy: %v", err)
	}
	backend := httptest.NewServer(upstream)
	m := NewMetrics(p)
	front := httptest.NewServer(&Handler{Policy: p, Next: NewProxy(mustURL(t, backend.URL), popts), Metrics: m})
	return &stack{front: front, backend: backend, policy: p, metrics: m}
}

// close waits for every request to end, in the proxy and the backend.
func (s *stack) close() {
	s.front.Close()
	s.backend.Close()
}

type result struct {
	status int
	header http.Header
	body   string
	err    error
}

// send sends GET / with the Host header host, safe to call from any
// goroutine.
func send(client *http.Client, base, host string, hdr map[string]string) result {
	req, err := http.NewRequest("GET", base+"/", nil)
	if err != nil {
		return result{err: err}
	}
	req.Host = host
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: string(body), err: err}
}

// sendAll sends one request per host at once and returns a channel of the
// results in the order they come back.
func sendAll(client *http.Client, base string, hosts []string) <-chan result {
	out := make(chan result, len(hosts))
	for _, h := range hosts {
		go func() { out <- send(client, base, h, nil) }()
	}
	return out
}

func receive(t *testing.T, c <-chan result, n int) []result {
	t.Helper()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	var rs []result
	for len(rs) < n {
		select {
		case r := <-c:
			if r.err != nil {
				t.Fatalf("request %d: %v", len(rs), r.err)
			}
			rs = append(rs, r)
		case <-timeout.C:
			t.Fatalf("only %d of %d responses came back", len(rs), n)
		}
	}
	return rs
}

// receiveOK receives n results from c and fails t for each that is not
// 200; what says which responses they are ("held").
func receiveOK(t *testing.T, c <-chan result, n int, what string) {
	t.Helper()
	for i, r := range receive(t, c, n) {
		if r.status != 200 {
			t.Errorf("%s response %d: %d, want 200", what, i, r.status)
		}
	}
}

func statuses(rs []result) map[int]int {
	m := map[int]int{}
	for _, r := range rs {
		m[r.status]++
	}
	return m
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// metricValue reads one series of m: name and the limit label.
func metricValue(t *testing.T, m *Metrics, name, limit string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			if labelValue(s, "limit") != limit {
				continue
			}
			if s.Counter != nil {
				return s.Counter.GetValue()
			}
			return s.Gauge.GetValue()
		}
	}
	t.Fatalf("no series %s{limit=%q}", name, limit)
	return 0
}

// series is one metric series of a limit and the value a test wants of it.
type series struct {
	name, limit string
	want        float64
}

// checkSeries fails t for each series of want whose value in m differs;
// when says at which point of the test ("while held").
func checkSeries(t *testing.T, m *Metrics, when string, want ...series) {
	t.Helper()
	for _, s := range want {
		if got := metricValue(t, m, s.name, s.limit); got != s.want {
			t.Errorf("%s: %s{limit=%q} = %v, want %v", when, s.name, s.limit, got, s.want)
		}
	}
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestConnPerHost is the first "done when": 8 concurrent requests
// for one Host with limit_conn $host 4 against a slow upstream give exactly
// 4×200 and 4×503; 8 for 8 Hosts give 8×200.
func TestConnPerHost(t *testing.T) {
	g := newGate(16)
	st := newStack(t, limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 4}}}, g, ProxyOptions{})
	defer st.close()
	defer g.open()

	c := sendAll(st.front.Client(), st.front.URL, repeat("site1", 8))
	g.await(t, 4)
	rejected := receive(t, c, 4) // while the first four are held
	for i, r := range rejected {
		if r.status != 503 {
			t.Fatalf("response %d while 4 are in flight: %d %q, want 503", i, r.status, r.body)
		}
		if got, want := r.header.Get(LimitHeader), "limit_conn[0] $host"; got != want {
			t.Errorf("response %d: %s = %q, want %q", i, LimitHeader, got, want)
		}
	}
	if got := st.policy.Busiest(5); len(got) != 1 || got[0] != (limit.KeyCount{Key: "site1", InFlight: 4}) {
		t.Errorf("Busiest while held = %v, want [{site1 4}]", got)
	}
	checkSeries(t, st.metrics, "while held", series{"stampede_limit_in_flight", "limit_conn[0]", 4})
	g.open()
	receiveOK(t, c, 4, "held")
	st.close()
	checkSeries(t, st.metrics, "after",
		series{"stampede_limit_passed_total", "limit_conn[0]", 4},
		series{"stampede_limit_rejected_total", "limit_conn[0]", 4},
		series{"stampede_limit_rejected_dry_run_total", "limit_conn[0]", 0},
		series{"stampede_limit_in_flight", "limit_conn[0]", 0})
	if got := st.policy.Busiest(5); len(got) != 0 {
		t.Errorf("Busiest after all ended = %v, want none", got)
	}
}

func TestConnEightHosts(t *testing.T) {
	g := newGate(16)
	st := newStack(t, limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 4}}}, g, ProxyOptions{})
	defer st.close()
	defer g.open()
	var hosts []string
	for i := 1; i <= 8; i++ {
		hosts = append(hosts, "site"+string(rune('0'+i)))
	}
	c := sendAll(st.front.Client(), st.front.URL, hosts)
	g.await(t, 8)
	g.open()
	if got := statuses(receive(t, c, 8)); got[200] != 8 {
		t.Errorf("8 hosts: statuses %v, want 8×200", got)
	}
}

// TestReqBurstNoDelay: limit_req $host 1r/s burst=5 nodelay, 7 simultaneous
// requests → 6×200, 1×503.
func TestReqBurstNoDelay(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	st := newStack(t, limit.Config{Req: []limit.ReqSpec{{Key: "$host", Rate: "1r/s", Burst: 5, NoDelay: true}}}, ok, ProxyOptions{})
	defer st.close()
	rs := receive(t, sendAll(st.front.Client(), st.front.URL, repeat("site1", 7)), 7)
	if got := statuses(rs); got[200] != 6 || got[503] != 1 {
		t.Errorf("7 simultaneous: statuses %v, want 6×200 and 1×503", got)
	}
	for _, r := range rs {
		if r.status == 503 && r.header.Get(LimitHeader) != "limit_req[0] $host" {
			t.Errorf("503 with %s = %q, want %q", LimitHeader, r.header.Get(LimitHeader), "limit_req[0] $host")
		}
	}
	st.close()
	checkSeries(t, st.metrics, "after",
		series{"stampede_limit_rejected_total", "limit_req[0]", 1},
		series{"stampede_limit_passed_total", "limit_req[0]", 6})
}

func TestHandlerCases(t *testing.T) {
	tests := []struct {
		name   string
		cfg    limit.Config
		n      int               // simultaneous requests, held at the upstream
		hdr    map[string]string // on every request
		host   string
		held   int // how many reach the upstream while held
		want   map[int]int
		header string // a response header every answer must have ("name: value")
	}{
		{"empty key is not counted", limit.Config{Conn: []limit.ConnSpec{{Key: "$http_x_tenant", PerKey: 1}}},
			4, nil, "site1", 4, map[int]int{200: 4}, ""},
		{"key from a header", limit.Config{Conn: []limit.ConnSpec{{Key: "$http_x_tenant", PerKey: 1}}},
			4, map[string]string{"X-Tenant": "acme"}, "site1", 1, map[int]int{200: 1, 503: 3}, ""},
		{"two limits, the tighter rejects", limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 3}, {Key: "$binary_remote_addr", PerKey: 2, Status: 429}}},
			4, nil, "site1", 2, map[int]int{200: 2, 429: 2}, ""},
		{"status per limit", limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 1, Status: 429}}},
			3, nil, "site1", 1, map[int]int{200: 1, 429: 2}, ""},
		{"dry run lets everything through", limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 1, DryRun: true}}},
			3, nil, "site1", 3, map[int]int{200: 3}, ""},
		{"invalid host", limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 1}}},
			2, nil, "site..one", 0, map[int]int{400: 2}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGate(tt.n)
			st := newStack(t, tt.cfg, g, ProxyOptions{})
			defer st.close()
			defer g.open()
			out := make(chan result, tt.n)
			for i := 0; i < tt.n; i++ {
				go func() { out <- send(st.front.Client(), st.front.URL, tt.host, tt.hdr) }()
			}
			g.await(t, tt.held)
			early := receive(t, out, tt.n-tt.held)
			g.open()
			rs := append(early, receive(t, out, tt.held)...)
			got := statuses(rs)
			for code, n := range tt.want {
				if got[code] != n {
					t.Errorf("statuses %v, want %v", got, tt.want)
					break
				}
			}
		})
	}
}

func TestDryRunHeaderAndMetrics(t *testing.T) {
	g := newGate(4)
	st := newStack(t, limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 1, DryRun: true}}}, g, ProxyOptions{})
	defer st.close()
	defer g.open()
	c := sendAll(st.front.Client(), st.front.URL, repeat("site1", 3))
	g.await(t, 3)
	if got := st.policy.Busiest(5); len(got) != 1 || got[0].InFlight != 1 {
		t.Errorf("Busiest = %v, want site1 with 1 in flight (dry-run rejects hold no slot)", got)
	}
	g.open()
	dry := 0
	for _, r := range receive(t, c, 3) {
		if v := r.header.Get(DryRunHeader); v != "" {
			dry++
			if v != "limit_conn[0] $host" {
				t.Errorf("%s = %q, want %q", DryRunHeader, v, "limit_conn[0] $host")
			}
		}
	}
	st.close()
	if dry != 2 {
		t.Errorf("%d responses with %s, want 2", dry, DryRunHeader)
	}
	checkSeries(t, st.metrics, "after",
		series{"stampede_limit_rejected_dry_run_total", "limit_conn[0]", 2},
		series{"stampede_limit_in_flight", "limit_conn[0]", 0})
}

func TestMetricsEndpoints(t *testing.T) {
	g := newGate(4)
	st := newStack(t, limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 4}}}, g, ProxyOptions{})
	defer st.close()
	defer g.open()
	c := sendAll(st.front.Client(), st.front.URL, []string{"a", "a", "a", "b"})
	g.await(t, 4)
	ms := httptest.NewServer(st.metrics.Handler())
	defer ms.Close()

	kr, err := ms.Client().Get(ms.URL + KeysPath)
	if err != nil {
		t.Fatal(err)
	}
	kbody, _ := io.ReadAll(kr.Body)
	kr.Body.Close()
	if kr.StatusCode != 200 {
		t.Fatalf("GET %s: %d", KeysPath, kr.StatusCode)
	}
	var keys []limit.KeyCount
	if err := json.Unmarshal(kbody, &keys); err != nil {
		t.Fatalf("%s is not JSON: %v\n%s", KeysPath, err, kbody)
	}
	if want := []limit.KeyCount{{Key: "a", InFlight: 3}, {Key: "b", InFlight: 1}}; len(keys) != 2 || keys[0] != want[0] || keys[1] != want[1] {
		t.Errorf("%s = %v, want %v", KeysPath, keys, want)
	}
	resp, err := ms.Client().Get(ms.URL + MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `stampede_limit_in_flight{key="$host",limit="limit_conn[0]"} 4`; !strings.Contains(string(body), want) {
		t.Errorf("%s lacks %q:\n%s", MetricsPath, want, body)
	}
	g.open()
	receive(t, c, 4)
}

// direct runs h on a request for host with ctx, as the server would, and
// returns what was written.
func direct(h http.Handler, ctx context.Context, host string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "http://"+host+"/", nil).WithContext(ctx)
	r.RemoteAddr = "127.0.0.1:5000"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestReqDelayTwoStage plays DESIGN.md's worked example in virtual time:
// rate=5r/s burst=12 delay=8, 14 simultaneous requests → 1–9 at once,
// 10–13 after 200/400/600/800 ms, 14 rejected. At time scale 0.5, given
// as a Clock with no Base, the waits are halved.
func TestReqDelayTwoStage(t *testing.T) {
	for _, ts := range []float64{0, 0.5} {
		synctest.Test(t, func(t *testing.T) {
			p, err := limit.NewPolicy(limit.Config{Req: []limit.ReqSpec{{Key: "$host", Rate: "5r/s", Burst: 12, Delay: 8}}})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			var mu sync.Mutex
			var waits []time.Duration
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				waits = append(waits, time.Since(start))
				mu.Unlock()
			})
			h := &Handler{Policy: p, Next: next, Metrics: NewMetrics(p), Clock: clock.Clock{Model: clock.ModelClock{Scale: clock.Scale(ts)}}}
			codes := make([]int, 14)
			var wg sync.WaitGroup
			for i := range codes {
				// Requests arrive in order at the same instant.
				w := httptest.NewRecorder()
				r := httptest.NewRequest("GET", "http://site1/", nil)
				wg.Go(func() {
					h.ServeHTTP(w, r)
					codes[i] = w.Code
				})
				synctest.Wait() // this one is admitted, waiting or rejected before the next
			}
			wg.Wait()
			scale := 1.0
			if ts != 0 {
				scale = ts
			}
			want := []time.Duration{0, 0, 0, 0, 0, 0, 0, 0, 0, 200, 400, 600, 800}
			if len(waits) != len(want) {
				t.Fatalf("time scale %v: %d requests reached Next, want %d (codes %v)", ts, len(waits), len(want), codes)
			}
			for i, w := range want {
				w = time.Duration(float64(w*time.Millisecond) * scale)
				if waits[i] != w {
					t.Errorf("time scale %v: step %d: request reached Next after %v, want %v", ts, i+1, waits[i], w)
				}
			}
			if codes[13] != 503 {
				t.Errorf("time scale %v: request 14 answered %d, want 503", ts, codes[13])
			}
			if got := metricValue(t, h.Metrics, "stampede_limit_delayed_total", "limit_req[0]"); got != 4 {
				t.Errorf("time scale %v: delayed = %v, want 4", ts, got)
			}
		})
	}
}

// TestClientGoneDuringDelay: a client that leaves while limit_req delays
// it is answered nothing (ServeHTTP aborts with http.ErrAbortHandler, so
// that the server closes with nothing written, as nginx does), never
// reaches Next and never takes a limit_conn slot.
func TestClientGoneDuringDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := limit.NewPolicy(limit.Config{
			Req:  []limit.ReqSpec{{Key: "$host", Rate: "1r/m", Burst: 5}},
			Conn: []limit.ConnSpec{{Key: "$host", PerKey: 1}},
		})
		if err != nil {
			t.Fatal(err)
		}
		reached := 0
		h := &Handler{Policy: p, Next: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached++ })}
		if w := direct(h, context.Background(), "site1"); w.Code != 200 || reached != 1 {
			t.Fatalf("first request: %d, Next reached %d times; want 200, 1", w.Code, reached)
		}
		ctx, cancel := context.WithCancel(context.Background())
		w := httptest.NewRecorder()
		var aborted any
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() { aborted = recover() }()
			r := httptest.NewRequest("GET", "http://site1/", nil).WithContext(ctx)
			r.RemoteAddr = "127.0.0.1:5000"
			h.ServeHTTP(w, r)
		}()
		synctest.Wait() // durably waiting out its 60 s delay
		if got := p.Busiest(1); len(got) != 0 {
			t.Errorf("Busiest during the delay = %v, want none", got)
		}
		cancel()
		<-done
		if reached != 1 {
			t.Errorf("Next reached %d times, want 1: the gone client must not be served", reached)
		}
		if aborted != http.ErrAbortHandler {
			t.Errorf("ServeHTTP for the gone client: recovered %v, want http.ErrAbortHandler", aborted)
		}
		if w.Body.Len() != 0 || len(w.Header()) != 0 || w.Flushed {
			t.Errorf("gone client answered %q %v, want nothing", w.Body.String(), w.Header())
		}
		if got := p.Busiest(1); len(got) != 0 {
			t.Errorf("Busiest after = %v, want none", got)
		}
	})
}

// TestReleaseOnPanic: a panic in Next releases the slot and goes on up, and
// http.ErrAbortHandler still aborts the response.
func TestReleaseOnPanic(t *testing.T) {
	p, err := limit.NewPolicy(limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	h := &Handler{Policy: p, Metrics: NewMetrics(p), Next: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(boom) })}
	func() {
		defer func() {
			if r := recover(); r != boom {
				t.Errorf("recovered %v, want the handler's panic", r)
			}
		}()
		direct(h, context.Background(), "site1")
		t.Error("ServeHTTP returned normally after Next panicked")
	}()
	if got := p.Busiest(1); len(got) != 0 {
		t.Errorf("Busiest after a panic = %v, want none", got)
	}
	if got := metricValue(t, h.Metrics, "stampede_limit_in_flight", "limit_conn[0]"); got != 0 {
		t.Errorf("in_flight after a panic = %v, want 0", got)
	}

	// Through a server: ErrAbortHandler aborts the connection.
	h.Next = http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	srv := httptest.NewServer(h)
	r := send(srv.Client(), srv.URL, "site1", nil)
	srv.Close()
	if r.err == nil {
		t.Errorf("ErrAbortHandler: got %d, want the connection aborted", r.status)
	}
	if got := p.Busiest(1); len(got) != 0 {
		t.Errorf("Busiest after ErrAbortHandler = %v, want none", got)
	}
	h.Next = http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	if w := direct(h, context.Background(), "site1"); w.Code != 200 {
		t.Errorf("after the panics the key answers %d, want 200 (slot leaked?)", w.Code)
	}
}

type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

// BenchmarkHandler measures the limiting stages alone: keys, limit_req,
// limit_conn, release, with a Next that does nothing.
func BenchmarkHandler(b *testing.B) {
	p, err := limit.NewPolicy(limit.Config{
		Req:  []limit.ReqSpec{{Key: "$binary_remote_addr", Rate: "1000000000r/s", Burst: 1000000, NoDelay: true}},
		Conn: []limit.ConnSpec{{Key: "$host", PerKey: 65535}},
	})
	if err != nil {
		b.Fatal(err)
	}
	h := &Handler{Policy: p, Metrics: NewMetrics(p), Next: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := httptest.NewRequest("GET", "http://site1/", nil)
		r.RemoteAddr = "127.0.0.1:5000"
		w := &discardWriter{h: http.Header{}}
		for pb.Next() {
			h.ServeHTTP(w, r)
		}
	})
}

// TestHandlersShareClock: two Handlers over one Policy given one Clock
// agree on model time, whenever each was made or first used. At time scale
// 0.01 a wall second is 100 s of model time, and 6r/m admits one request
// per 10 s of it: a Handler that anchored model time at its own first
// request would see b's request at step 3 as older than a's and reject it.
func TestHandlersShareClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := limit.NewPolicy(limit.Config{Req: []limit.ReqSpec{{Key: "$host", Rate: "6r/m"}}})
		if err != nil {
			t.Fatal(err)
		}
		c := clock.NewClock(0.01, false)
		next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
		a := &Handler{Policy: p, Next: next, Clock: c}
		b := &Handler{Policy: p, Next: next, Clock: c}
		ms := time.Millisecond
		for i, s := range []struct {
			at   time.Duration // wall time since the Clock was made
			h    *Handler
			want int
		}{
			{10000 * ms, a, 200}, // model 1000 s
			{10050 * ms, b, 503}, // 1005 s: 5 s after a's
			{10200 * ms, b, 200}, // 1020 s
			{10250 * ms, a, 503}, // 1025 s: 5 s after b's
		} {
			time.Sleep(time.Until(c.Model.Base.Add(s.at)))
			if w := direct(s.h, context.Background(), "site1"); w.Code != s.want {
				t.Errorf("step %d: request at +%v answered %d, want %d", i+1, s.at, w.Code, s.want)
			}
		}
		now := time.Now()
		if ma, mb := a.clock().Model.Instant(now), b.clock().Model.Instant(now); !ma.Equal(mb) {
			t.Errorf("model time now: a %v, b %v; want them equal", ma, mb)
		}
		if got, want := c.Model.Now(), 1025*time.Second; got != want {
			t.Errorf("model time since the Clock was made = %v, want %v", got, want)
		}
	})
}
