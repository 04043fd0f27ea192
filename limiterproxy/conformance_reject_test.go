package limiterproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"stampede/internal/nginxtest"
	"stampede/limit"
)

// rejectCase is one rejected request TestConformanceRejectKeepAlive sends
// on a connection of its own, after what makes its limit reject it, and
// followed on the same connection by a plain request no limit counts.
type rejectCase struct {
	name   string
	path   string // the rejected request's location; its key is the ?k= argument
	conn   bool   // rejected by limit_conn (a request on another connection holds the slot), else by limit_req
	status int    // the status both answer
	method string // GET, or POST with body
	body   string // "5", "chunked", "512k", or "late" (5 bytes, 3 of them once the answer is in): what the POST sends
	keep   bool   // nginx keeps the connection for the next request (a check on the test itself)
}

// rejectCfg is the configuration TestConformanceRejectKeepAlive plays at
// nginx and at stampede: a limit_req of 1r/m (the second request of a key
// is rejected) or a limit_conn of 1 per location, each location with its
// own status. The keys are ?k= arguments, so that no other request counts.
var rejectCfg = func() limit.Config {
	req := func(status int) []limit.ReqSpec {
		return []limit.ReqSpec{{Key: "$arg_k", Rate: "1r/m", NoDelay: true, Status: status}}
	}
	conn := func(status int) []limit.ConnSpec {
		return []limit.ConnSpec{{Key: "$arg_k", PerKey: 1, Status: status}}
	}
	return limit.Config{Locations: []limit.Location{
		{Paths: []string{"/req/"}, Req: req(0)},
		{Paths: []string{"/req429/"}, Req: req(429)},
		{Paths: []string{"/req500/"}, Req: req(500)},
		{Paths: []string{"/req501/"}, Req: req(501)},
		{Paths: []string{"/conn/"}, Conn: conn(0)},
		{Paths: []string{"/conn429/"}, Conn: conn(429)},
		{Paths: []string{"/conn400/"}, Conn: conn(400)},
		{Paths: []string{"/conn413/"}, Conn: conn(413)},
		{Paths: []string{"/conn414/"}, Conn: conn(414)},
	}}
}()

// TestConformanceRejectKeepAlive sends requests that limit_req and
// limit_conn reject, with and without a body, each on a connection that
// then carries a plain request, at nginx and at stampede's servers (h1,
// net/http, epoll, which answers a GET's rejection on its loop), and
// requires the same of each: the status, whether the answer says
// "Connection: close", whether the whole answer arrives, and whether the
// next request on the connection is answered. A load generator that
// reuses its connections opens as many as the proxy closes.
//
// Measured on nginx 1.22: a rejection is an error page
// (ngx_http_special_response_handler), answered at once, before the
// request's body has come; then nginx reads and drops all of the body
// and keeps the connection, unless the
// status is one after which nginx never keeps one: 400, 413, 414, 500,
// 501. The reason phrase is nginx's own ("503 Service Temporarily
// Unavailable"), which clients do not read; stampede's body names the
// limit and key, which nginx's error page cannot. nginx's codes of its
// own are not played: as a limit's status nginx answers 494 to 497 with a
// 400 and closes after 408, 444 and 499 with no answer, where stampede
// answers them as they are, as the simulator counts them.
func TestConformanceRejectKeepAlive(t *testing.T) {
	nginxtest.Require(t)
	up, us := startConfUpstream(t)
	var cases []rejectCase
	for _, b := range []struct{ method, body string }{{"GET", ""}, {"POST", "5"}, {"POST", "chunked"}, {"POST", "512k"}, {"POST", "late"}} {
		cases = append(cases,
			rejectCase{name: "limit_req", path: "/req/", status: 503, method: b.method, body: b.body, keep: true},
			rejectCase{name: "limit_conn", path: "/conn/", conn: true, status: 503, method: b.method, body: b.body, keep: true},
		)
	}
	cases = append(cases,
		rejectCase{name: "limit_req_status 429", path: "/req429/", status: 429, method: "GET", keep: true},
		rejectCase{name: "limit_req_status 500", path: "/req500/", status: 500, method: "GET", keep: false},
		rejectCase{name: "limit_req_status 501", path: "/req501/", status: 501, method: "GET", keep: false},
		rejectCase{name: "limit_conn_status 429", path: "/conn429/", conn: true, status: 429, method: "GET", keep: true},
		rejectCase{name: "limit_conn_status 400", path: "/conn400/", conn: true, status: 400, method: "GET", keep: false},
		rejectCase{name: "limit_conn_status 413", path: "/conn413/", conn: true, status: 413, method: "GET", keep: false},
		rejectCase{name: "limit_conn_status 414", path: "/conn414/", conn: true, status: 414, method: "GET", keep: false},
		rejectCase{name: "limit_conn_status 400, POST", path: "/conn400/", conn: true, status: 400, method: "POST", body: "5", keep: false},
	)
	targets := finTargets(t, rejectCfg, us, 8, false, true)
	for i, tc := range cases {
		name := tc.name + ", " + tc.method
		if tc.body != "" {
			name += " " + tc.body
		}
		t.Run(name, func(t *testing.T) {
			for _, target := range targets {
				if target.name == "net/http" && (tc.body == "512k" || tc.body == "late") {
					// net/http reads up to 256 KiB of a body its handler
					// left before it writes the answer, and closes past
					// them, which NewServer cannot change.
					continue
				}
				up.reset()
				key := fmt.Sprintf("%s.%d", target.name, i)
				got := playReject(t, up, strings.TrimPrefix(target.base, "http://"), tc, key)
				t.Logf("%s: %s", target.name, got)
				want := rejectSeen{status: tc.status, whole: true, close: !tc.keep, next: 200}
				if !tc.keep {
					want.next = 0
				}
				if got != want {
					who := "nginx does"
					if target.name == "nginx" {
						who = "the case expects"
					}
					t.Errorf("%s: %s; %s %s", target.name, got, who, want)
				}
				up.mu.Lock()
				close(up.release)
				up.mu.Unlock()
			}
		})
	}
}

// rejectSeen is what a client saw of a rejection and the request it sent
// next on the connection.
type rejectSeen struct {
	status int  // the rejection's
	whole  bool // its head and all of its body came
	close  bool // it said Connection: close
	next   int  // the next request's status; 0: the connection closed first
}

func (s rejectSeen) String() string {
	next := "the connection closed"
	if s.next != 0 {
		next = fmt.Sprintf("then %d", s.next)
	}
	return fmt.Sprintf("%d (whole %t, Connection: close %t), %s", s.status, s.whole, s.close, next)
}

// playReject makes the request of tc with key rejected at addr (a first
// request of the key for limit_req, on the connection itself; a request
// held at up, on another, for limit_conn), then sends a plain request
// on the connection, and returns what the client saw.
func playReject(t *testing.T, up *confUpstream, addr string, tc rejectCase, key string) rejectSeen {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	if tc.conn {
		hold, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer hold.Close()
		id := key + ".hold"
		fmt.Fprintf(hold, "GET %shold?k=%s HTTP/1.1\r\nHost: site1\r\nX-Req-Id: %s\r\n\r\n", tc.path, key, id)
		deadline := time.After(10 * time.Second)
		for !up.isHeld(id) {
			select {
			case <-up.changed:
			case <-deadline:
				t.Fatalf("%s never reached the upstream", id)
			}
		}
	} else {
		fmt.Fprintf(c, "GET %s?k=%s HTTP/1.1\r\nHost: site1\r\n\r\n", tc.path, key)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("the first request of %s: %v", key, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("the first request of %s: %d, want 200", key, resp.StatusCode)
		}
	}
	var req strings.Builder
	var rest string // sent once the answer is in
	fmt.Fprintf(&req, "%s %s?k=%s HTTP/1.1\r\nHost: site1\r\n", tc.method, tc.path, key)
	switch tc.body {
	case "":
		req.WriteString("\r\n")
	case "5":
		req.WriteString("Content-Length: 5\r\n\r\nabcde")
	case "chunked":
		req.WriteString("Transfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n0\r\n\r\n")
	case "512k":
		// Over net/http's 256 KiB of a body it discards, under nginx's
		// client_max_body_size 1m, past which nginx answers 413 first.
		fmt.Fprintf(&req, "Content-Length: %d\r\n\r\n%s", 512<<10, strings.Repeat("b", 512<<10))
	case "late":
		req.WriteString("Content-Length: 5\r\n\r\nab")
		rest = "cde"
	}
	// Written while the answer is read: a server may answer before it
	// has read the body.
	written := make(chan error, 1)
	go func() {
		_, err := io.WriteString(c, req.String())
		written <- err
	}()
	var seen rejectSeen
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		<-written
		return seen
	}
	seen.status, seen.close = resp.StatusCode, resp.Close
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	seen.whole = err == nil
	if err := <-written; err != nil {
		return seen
	}
	if _, err := io.WriteString(c, rest+"GET /next HTTP/1.1\r\nHost: site1\r\n\r\n"); err != nil {
		return seen
	}
	if next, err := http.ReadResponse(br, nil); err == nil {
		io.Copy(io.Discard, next.Body)
		next.Body.Close()
		seen.next = next.StatusCode
	}
	return seen
}

// TestConformanceHeaderTooLarge sends a head with a header line over
// every cap (nginx's large_client_header_buffers 4 8k, stampede's 32 KiB
// MaxHeaderBytes), goes on sending the rest of its head for a while and
// a request after it, and only then reads, at nginx and at `stampede
// proxy`'s h1 and epoll servers (which hands such a head to its h1
// server). Measured on nginx 1.22: it answers at once, 400 "Request
// Header Or Cookie Too Large" with Connection: close, half-closes, and
// reads and drops what the client still sends (lingering close: until the
// client is silent for lingering_timeout 5s, for lingering_time 30s at
// most), so that the client's writes succeed, it reads the whole answer
// and then the end of the connection, not a reset, and the request after
// the head is never answered. stampede answers 431, the status for it
// (ServerOptions.MaxHeaderBytes); otherwise it must do the same.
// NewServer's net/http server is not held to it: it reads what follows
// for 500 ms only (closeWriteAndWait), which it cannot be told otherwise.
func TestConformanceHeaderTooLarge(t *testing.T) {
	nginxtest.Require(t)
	_, us := startConfUpstream(t)
	// The rest of the head: more than half a second of it, far less than
	// lingering_timeout between two writes.
	const more, gap = 30, 50 * time.Millisecond
	for _, target := range finTargets(t, rejectCfg, us, 8, false, false) {
		t.Run(target.name, func(t *testing.T) {
			c, err := net.Dial("tcp", strings.TrimPrefix(target.base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			if _, err := io.WriteString(c, "GET /fast HTTP/1.1\r\nHost: site1\r\nX-Big: "+strings.Repeat("a", 40<<10)+"\r\n"); err != nil {
				t.Fatal(err)
			}
			for i := range more {
				time.Sleep(gap)
				if _, err := fmt.Fprintf(c, "X-More-%d: %s\r\n", i, strings.Repeat("b", 1<<10)); err != nil {
					t.Fatalf("the head's line %d after the one over the cap: %v; nginx reads and drops them", i, err)
				}
			}
			if _, err := io.WriteString(c, "\r\nGET /fast HTTP/1.1\r\nHost: site1\r\n\r\n"); err != nil {
				t.Fatalf("the end of the head and a request after it: %v; nginx reads and drops them", err)
			}
			got, err := io.ReadAll(c)
			if err != nil {
				t.Fatalf("%v after %q; nginx's answer comes whole, then the end of the connection", err, got)
			}
			want := 431
			if target.name == "nginx" {
				want = 400
			}
			resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(got))), nil)
			if err != nil {
				t.Fatalf("%v in %q", err, got)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("the answer's body: %v in %q", err, got)
			}
			if resp.StatusCode != want || !resp.Close {
				t.Errorf("%q, Connection: close %t; want %d and close", resp.Status, resp.Close, want)
			}
			if n := strings.Count(string(got), "HTTP/1.1 "); n != 1 {
				t.Errorf("%d answers in %q; want one, none to the request after the head", n, got)
			}
			t.Logf("%s %q, %d bytes of body, then the end", resp.Proto, resp.Status, len(body))
		})
	}
}
