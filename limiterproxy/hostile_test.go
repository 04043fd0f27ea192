package limiterproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"stampede/internal/nginxtest"
	"stampede/limit"
)

// The tests here hold slow and hostile peers to what nginx 1.22 does with
// them, with real nginx (configured by WriteNginx) beside the proxy, both
// in front of one scripted upstream: every wait ends at its timeout, and
// the limit_conn slot a stalled exchange holds is freed when it does.

// hostileTimeouts are short, so that the tests take seconds.
var hostileTimeouts = struct{ read, send, body, header time.Duration }{
	read: time.Second, send: time.Second, body: time.Second, header: time.Second,
}

// hostileSide is one proxy under test: nginx, or stampede with its
// /debug/keys and its listener's connection count.
type hostileSide struct {
	name  string
	addr  string
	keys  func(t *testing.T) map[string]int // nil for nginx
	inUse func() int
}

// hostileSides are nginx and the proxy on each of proxyServers, all in
// front of upstream.
func hostileSides(t *testing.T, upstream string) []hostileSide {
	t.Helper()
	sides := []hostileSide{startHostileNginx(t, upstream)}
	for _, ps := range proxyServers {
		sides = append(sides, startHostileStampede(t, upstream, ps.name, ps.new))
	}
	return sides
}

func startHostileStampede(t *testing.T, upstream, name string, newServer func(http.Handler, ServerOptions) server) hostileSide {
	t.Helper()
	to := hostileTimeouts
	p, err := limit.NewPolicy(limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(p)
	sopts := ServerOptions{ReadHeaderTimeout: to.header, ClientBodyTimeout: to.body}
	ln, err := Listen("127.0.0.1:0", sopts)
	if err != nil {
		t.Fatal(err)
	}
	proxy := NewProxy(mustURL(t, "http://"+upstream), ProxyOptions{ReadTimeout: to.read, SendTimeout: to.send})
	srv := newServer(&Handler{Policy: p, Next: proxy, Metrics: m}, sopts)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, srv, ln, time.Second) }()
	ms := httptest.NewServer(m.Handler())
	t.Cleanup(func() {
		ms.Close()
		cancel()
		<-served
	})
	keys := func(t *testing.T) map[string]int {
		t.Helper()
		resp, err := ms.Client().Get(ms.URL + KeysPath)
		if err != nil {
			t.Errorf("GET %s: %v", KeysPath, err)
			return nil
		}
		defer resp.Body.Close()
		var kc []limit.KeyCount
		if err := json.NewDecoder(resp.Body).Decode(&kc); err != nil {
			t.Errorf("GET %s: %v", KeysPath, err)
			return nil
		}
		got := map[string]int{}
		for _, k := range kc {
			got[k.Key] = k.InFlight
		}
		return got
	}
	inUse := ln.(inUser).InUse
	if iu, ok := srv.(inUser); ok {
		inUse = iu.InUse // the epoll server counts its connections itself
	}
	return hostileSide{name: name, addr: ln.Addr().String(), keys: keys, inUse: inUse}
}

func startHostileNginx(t *testing.T, upstream string) hostileSide {
	t.Helper()
	to := hostileTimeouts
	base := nginxtest.Start(t, func(w io.Writer, listen string) error {
		return WriteNginx(w, limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 4}}}, NginxOptions{
			Listen: listen, Upstream: upstream, ReadTimeout: to.read,
			SendTimeout: to.send, ClientBodyTimeout: to.body, ClientHeaderTimeout: to.header,
		})
	})
	return hostileSide{name: "nginx", addr: strings.TrimPrefix(base, "http://")}
}

// rawResult is what a client saw of one raw exchange. Times are from the
// last byte the client sent.
type rawResult struct {
	status    string        // the status line, "" if none came
	response  bool          // a whole header block came
	firstByte time.Duration // -1 if nothing came
	closed    time.Duration // when the server closed; -1 if it did not within the wait
}

// rawExchange sends req, then trickle one byte every gap, and reads what
// comes back for up to wait after the last byte, until the server closes
// or (untilClose false) the response headers are in.
func rawExchange(t *testing.T, addr, req string, trickle string, gap, wait time.Duration, untilClose bool) rawResult {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(trickle); i++ {
		time.Sleep(gap)
		if _, err := c.Write([]byte{trickle[i]}); err != nil {
			t.Fatalf("trickling byte %d: %v", i, err)
		}
	}
	sent := time.Now()
	c.SetReadDeadline(sent.Add(wait)) //nolint:errcheck
	r := rawResult{firstByte: -1, closed: -1}
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if n > 0 && r.firstByte < 0 {
			r.firstByte = time.Since(sent)
		}
		got = append(got, buf[:n]...)
		if i := strings.Index(string(got), "\r\n"); i > 0 && r.status == "" {
			r.status = string(got[:i])
		}
		r.response = strings.Contains(string(got), "\r\n\r\n")
		if err != nil {
			if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
				r.closed = time.Since(sent)
			}
			return r
		}
		if r.response && !untilClose {
			return r
		}
	}
}

// statusCode is the code of a status line, 0 for none.
func statusCode(line string) int {
	f := strings.Fields(line)
	if len(f) < 2 {
		return 0
	}
	code, _ := strconv.Atoi(f[1]) // none is 0
	return code
}

// hostileMargin is how late past its timeout an exchange may end: a second,
// plus twenty round trips of a plain request through the side as this run
// measured it, so that a loaded machine widens it.
func hostileMargin(t *testing.T, s hostileSide) time.Duration {
	t.Helper()
	var worst time.Duration
	for range 5 {
		start := time.Now()
		r := rawExchange(t, s.addr, "GET /ok HTTP/1.1\r\nHost: warmup\r\nConnection: close\r\n\r\n", "", 0, 10*time.Second, true)
		if statusCode(r.status) != 200 {
			t.Fatalf("%s: plain request: %q", s.name, r.status)
		}
		worst = max(worst, time.Since(start))
	}
	return time.Second + 20*worst
}

// earlyTimer is how much before its timeout, as the client measures, an
// exchange may end: nginx fires timers by the time it cached at its last
// event, a few milliseconds behind the clock.
const earlyTimer = 50 * time.Millisecond

type stallCase struct {
	name       string
	host       string
	req        string
	trickle    string
	timeout    time.Duration // which timeout ends it, after the last byte sent
	status     int           // the status both answer; 0: none
	headers    bool          // whether response headers reach the client (before the close)
	untilClose bool
}

func stallCases() []stallCase {
	to := hostileTimeouts
	return []stallCase{
		{name: "body stalls after the headers", host: "stall.example",
			req: "GET /stall HTTP/1.1\r\nHost: stall.example\r\n\r\n", timeout: to.read, status: 200, headers: true, untilClose: true},
		{name: "upgraded connection left idle", host: "upgrade.example",
			req:     "GET /upgrade HTTP/1.1\r\nHost: upgrade.example\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
			timeout: to.read, status: 101, headers: true, untilClose: true},
		{name: "client silent after its headers", host: "silent.example",
			req: "POST /never HTTP/1.1\r\nHost: silent.example\r\nContent-Length: 10\r\n\r\n", timeout: to.body, untilClose: true},
		{name: "body trickled to an upstream that never answers", host: "trickle.example",
			req: "POST /never HTTP/1.1\r\nHost: trickle.example\r\nContent-Length: 5\r\n\r\n", trickle: "01234",
			timeout: to.read, status: 504, headers: true},
		{name: "response headers trickled", host: "headers.example",
			req: "GET /trickle HTTP/1.1\r\nHost: headers.example\r\n\r\n", timeout: to.read, status: 504, headers: true},
		{name: "request headers never finished", host: "",
			req: "GET / HTTP/1.1\r\nHost: partial.example\r\n", timeout: to.header, untilClose: true},
	}
}

// TestStalledPeersFreeTheirSlot plays each stalled exchange at nginx and
// at stampede: both must end it the same way (status, headers passed on or
// not, connection closed) at its timeout, within a margin the run
// measures; at stampede the key holds its slot until then, as /debug/keys
// shows, and has none after.
func TestStalledPeersFreeTheirSlot(t *testing.T) {
	nginxtest.Require(t)
	up := startScriptedUpstream(t)
	sides := hostileSides(t, up.addr())
	margins := make([]time.Duration, len(sides))
	for i, s := range sides {
		margins[i] = hostileMargin(t, s)
		t.Logf("%s: margin %v", s.name, margins[i])
	}
	// A listener holds a place for the Accept it waits in.
	idle := make([]int, len(sides))
	for i, s := range sides {
		if s.inUse != nil {
			idle[i] = s.inUse()
		}
	}
	for _, tc := range stallCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for i, s := range sides {
				margin := margins[i]
				held := make(chan map[string]int, 1)
				if s.keys != nil && tc.host != "" {
					// Midway through the wait the key must hold its slot.
					go func() {
						time.Sleep(time.Duration(len(tc.trickle))*200*time.Millisecond + tc.timeout/2)
						held <- s.keys(t)
					}()
				}
				r := rawExchange(t, s.addr, tc.req, tc.trickle, 200*time.Millisecond, tc.timeout+margin+time.Second, tc.untilClose)
				end := r.closed
				if !tc.untilClose {
					end = r.firstByte
				}
				t.Logf("%s: status %q, first byte %v, closed %v (after the last byte sent)", s.name, r.status, r.firstByte, r.closed)
				if got := statusCode(r.status); got != tc.status || r.response != tc.headers {
					t.Errorf("%s: status %d, headers %t; want %d, %t", s.name, got, r.response, tc.status, tc.headers)
				}
				if end < tc.timeout-earlyTimer || end > tc.timeout+margin {
					t.Errorf("%s: ended after %v, want within [%v, %v] (timeout %v)", s.name, end, tc.timeout-earlyTimer, tc.timeout+margin, tc.timeout)
				}
				if s.keys == nil || tc.host == "" {
					continue
				}
				if k := <-held; k[tc.host] != 1 {
					t.Errorf("%s: midway, %s = %v, want %s holding 1 slot", s.name, KeysPath, k, tc.host)
				}
				// Freed by the time the client saw the end, or just after.
				deadline := time.Now().Add(margin)
				for s.keys(t)[tc.host] != 0 {
					if time.Now().After(deadline) {
						t.Fatalf("%s: %s still holds a slot %v after the exchange ended", s.name, tc.host, margin)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
	t.Cleanup(func() {
		// Every client connection, stalled or not, was given back.
		for i, s := range sides {
			if s.inUse == nil {
				continue
			}
			deadline := time.Now().Add(5 * time.Second)
			for s.inUse() > idle[i] && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := s.inUse() - idle[i]; n > 0 {
				t.Errorf("%s: %d client connections still open after every case", s.name, n)
			}
		}
	})
}

// TestRefusedLikeNginx sends the requests nginx refuses before any module
// sees them to nginx and to stampede, and requires the same status (and
// both to refuse: the upstream never sees them).
func TestRefusedLikeNginx(t *testing.T) {
	nginxtest.Require(t)
	up := startScriptedUpstream(t)
	sides := hostileSides(t, up.addr())
	cases := []struct {
		name string
		req  string
		want int
	}{
		{"empty Host on HTTP/1.1", "GET / HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n", 400},
		{"empty Host on HTTP/1.0", "GET / HTTP/1.0\r\nHost: \r\n\r\n", 400},
		{"no Host on HTTP/1.1", "GET / HTTP/1.1\r\nConnection: close\r\n\r\n", 400},
		{"Content-Length and Transfer-Encoding", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n", 400},
		{"duplicate Content-Length, equal", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc", 400},
		{"duplicate Content-Length, different", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\nConnection: close\r\n\r\nabcd", 400},
		{"obs-fold with a space", "GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n  c\r\nConnection: close\r\n\r\n", 400},
		{"obs-fold with a tab", "GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n\tc\r\nConnection: close\r\n\r\n", 400},
		{"Transfer-Encoding on HTTP/1.0", "POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
		{"CONNECT", "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", 400},
		{"TRACE", "TRACE / HTTP/1.1\r\nHost: a\r\n\r\n", 405},
		{"PRI * (HTTP/2 preface)", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400},
		{"PRI * HTTP/1.1", "PRI * HTTP/1.1\r\nHost: a\r\n\r\n", 400},
		{"OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", 400},
		{"a good request after a refused one is not refused", "GET /ok HTTP/1.1\r\nHost: a\r\n\r\n", 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, s := range sides {
				r := rawExchange(t, s.addr, tc.req, "", 0, 10*time.Second, false)
				if got := statusCode(r.status); got != tc.want {
					t.Errorf("%s: %q, want %d", s.name, r.status, tc.want)
				}
			}
		})
	}
	// A folded header on the second request of a connection is refused
	// too: the framing is followed across requests.
	for _, s := range sides {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "POST /ok HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc") //nolint:errcheck
		c.SetReadDeadline(time.Now().Add(10 * time.Second))                               //nolint:errcheck
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: first request: %v", s.name, err)
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck
		resp.Body.Close()
		io.WriteString(c, "GET /ok HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n") //nolint:errcheck
		resp2, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: second request: %v", s.name, err)
		}
		resp2.Body.Close()
		if resp.StatusCode != 200 || resp2.StatusCode != 400 {
			t.Errorf("%s: a good POST then a folded GET on one connection: %d, %d; want 200, 400", s.name, resp.StatusCode, resp2.StatusCode)
		}
		c.Close()
	}
}

// TestKeepAliveBodyStall: through the pooled upstream transport too, a
// body that stalls after its headers is cut off at the read timeout and
// its slot freed.
func TestKeepAliveBodyStall(t *testing.T) {
	up := startScriptedUpstream(t)
	const readTimeout = 300 * time.Millisecond
	p := mustPolicy(t, limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 1}}})
	front := httptest.NewUnstartedServer(nil)
	front.Config = NewServer(&Handler{Policy: p, Next: NewProxy(mustURL(t, "http://"+up.addr()), ProxyOptions{ReadTimeout: readTimeout, UpstreamKeepAlive: 32})}, ServerOptions{})
	front.Start()
	defer front.Close()
	s := hostileSide{name: "stampede (keep-alive)", addr: strings.TrimPrefix(front.URL, "http://")}
	margin := hostileMargin(t, s)
	r := rawExchange(t, s.addr, "GET /stall HTTP/1.1\r\nHost: stall.example\r\n\r\n", "", 0, readTimeout+margin+time.Second, true)
	if statusCode(r.status) != 200 || !r.response {
		t.Errorf("status %q, headers %t; want 200 and the headers passed on", r.status, r.response)
	}
	if r.closed < readTimeout-earlyTimer || r.closed > readTimeout+margin {
		t.Errorf("closed after %v, want within [%v, %v]", r.closed, readTimeout-earlyTimer, readTimeout+margin)
	}
	deadline := time.Now().Add(margin)
	for p.Conn[0].Limiter.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("stall.example still holds a slot %v after the cut-off", margin)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
