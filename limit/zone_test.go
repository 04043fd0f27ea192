package limit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"stampede/internal/nginxtest"
	"stampede/internal/parsetest"
)

// zoneKey is the i-th distinct key a zone is filled with: 6 bytes, so
// that limit_conn nodes are 64 bytes and limit_req nodes 128, as for most
// host names.
func zoneKey(i int) string { return fmt.Sprintf("k%05d", i) }

// connCapacity fills a limit_conn zone of size bytes with distinct keys
// and returns how many it took before the first rejection.
func connCapacity(size int64) int {
	l := NewConnLimiter(1, size)
	n := 0
	for {
		if _, v := l.Acquire(zoneKey(n)); v != Passed {
			return n
		}
		n++
	}
}

// rememberedKeys sends n distinct keys once each (first set), then each
// again, newest first, and returns how many are refused before the first
// that passes: how many keys a limit_req of 1r/m still remembers when the
// oldest are evicted one by one (nginx's limit_req evicts the least
// recently used node when its zone is full). send sends zoneKey(i) and
// reports whether it passed.
func rememberedKeys(n int, send func(i int, first bool) (passed bool)) int {
	for i := 0; i < n; i++ {
		send(i, true)
	}
	held := 0
	for i := n - 1; i >= 0 && !send(i, false); i-- {
		held++
	}
	return held
}

// reqCapacity is rememberedKeys for a ReqLimiter of 1r/m with a zone of
// size bytes.
func reqCapacity(size int64, n int) int {
	l := NewReqLimiter(1000/60, 0, 0, false, size)
	now := time.Unix(1_000_000, 0)
	return rememberedKeys(n, func(i int, _ bool) bool {
		return l.Allow(zoneKey(i), now).Verdict != Rejected
	})
}

// TestZoneCapacity holds the keys a zone takes to what nginx 1.22 takes,
// measured here by filling each zone with distinct keys: for limit_conn,
// requests held in their body until the first 503; for limit_req, the
// eviction count reqCapacity describes. (10m of limit_conn is nginx's
// arithmetic: holding 162,814 requests exceeds the machine's descriptors;
// its 2544 pages are the ones 10m of limit_req measures.)
func TestZoneCapacity(t *testing.T) {
	tests := []struct {
		zone      string
		pages     int64
		conn, req int
		// sharded: the limit_req is split into shards of their own LRU
		// from 1m on (req.go), so its evictions start a little earlier
		// than nginx's single LRU; reqLen is how many keys it holds.
		sharded bool
	}{
		{zone: "32k", pages: 7, conn: 446, req: 191},
		{zone: "64k", pages: 15, conn: 958, req: 447},
		{zone: "1m", pages: 254, conn: 16254, req: 8095, sharded: true},
		{zone: "10m", pages: 2544, conn: 162814, req: 81375, sharded: true},
	}
	for _, tt := range tests {
		size, err := ParseSize(tt.zone)
		if err != nil {
			t.Fatal(err)
		}
		if got := zonePages(size); got != tt.pages {
			t.Errorf("zone %s: zonePages = %d, want %d", tt.zone, got, tt.pages)
		}
		if got := connCapacity(size); got != tt.conn {
			t.Errorf("zone %s: limit_conn takes %d keys, want %d (nginx 1.22)", tt.zone, got, tt.conn)
		}
		if !tt.sharded {
			if got := reqCapacity(size, tt.req+50); got != tt.req {
				t.Errorf("zone %s: limit_req remembers %d keys, want %d (nginx 1.22)", tt.zone, got, tt.req)
			}
			continue
		}
		l := NewReqLimiter(1000/60, 0, 0, false, size)
		now := time.Unix(1_000_000, 0)
		for i := 0; i < 2*tt.req; i++ {
			l.Allow(zoneKey(i), now)
		}
		// Each of the 64 shards holds its 64th of the bytes, and the keys
		// round down by up to a node each: within 1% of nginx.
		if got := l.Len(); got > tt.req || got < tt.req*99/100 {
			t.Errorf("zone %s: limit_req holds %d keys, want %d (nginx 1.22) or within 1%% less", tt.zone, got, tt.req)
		}
	}
}

// TestZoneCapacityNginx fills the smallest zones of real nginx and of the
// limiters with the same distinct keys and requires the same count.
func TestZoneCapacityNginx(t *testing.T) {
	nginxtest.Require(t)
	up := httptest200(t)
	for _, kind := range []string{"limit_conn", "limit_req"} {
		for _, zone := range []string{"32k", "64k"} {
			t.Run(kind+" "+zone, func(t *testing.T) {
				size, _ := ParseSize(zone)
				base := nginxtest.Start(t, func(w io.Writer, listen string) error {
					return writeZoneNginx(w, kind, zone, listen, up)
				})
				addr := strings.TrimPrefix(base, "http://")
				var got, want int
				if kind == "limit_conn" {
					want = connCapacity(size)
					got = nginxConnCapacity(t, addr, want+20)
				} else {
					want = reqCapacity(size, connCapacity(size))
					got = nginxReqCapacity(t, addr, want+50)
				}
				t.Logf("%s %s: nginx %d keys, stampede %d", kind, zone, got, want)
				if got != want {
					t.Errorf("%s %s: nginx takes %d keys, stampede %d", kind, zone, got, want)
				}
			})
		}
	}
}

// httptest200 serves 200 to anything on a loopback port until the test
// ends, and returns its address.
func httptest200(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
	go srv.Serve(ln) //nolint:errcheck // ErrServerClosed
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// writeZoneNginx writes an nginx.conf with one zone of kind and size,
// named as WriteNginx names it (the name's length is part of what the
// zone's init allocates), keyed by $host.
func writeZoneNginx(w io.Writer, kind, zone, listen, upstream string) error {
	decl, use := "limit_conn_zone $host zone=stampede_conn0:"+zone+";", "limit_conn stampede_conn0 1;"
	if kind == "limit_req" {
		decl, use = "limit_req_zone $host zone=stampede_req0:"+zone+" rate=1r/m;", "limit_req zone=stampede_req0;"
	}
	_, err := fmt.Fprintf(w, `worker_processes 1;
pid nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path client_body_temp; proxy_temp_path proxy_temp;
    fastcgi_temp_path fastcgi_temp; uwsgi_temp_path uwsgi_temp; scgi_temp_path scgi_temp;
    keepalive_requests 100000;
    %s
    server {
        listen %s;
        location / { %s proxy_pass http://%s; }
    }
}
`, decl, listen, use, upstream)
	return err
}

// nginxConnCapacity holds n requests for distinct hosts at nginx, each
// waiting in its body, and returns how many were not answered 503.
func nginxConnCapacity(t *testing.T, addr string, n int) int {
	var rejected atomic.Int64
	var wg sync.WaitGroup
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
	}()
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if _, err := fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Length: 1\r\n\r\n", zoneKey(i)); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			line, err := bufio.NewReader(c).ReadString('\n')
			if err == nil && strings.Contains(line, " 503 ") {
				rejected.Add(1)
			}
		})
	}
	// The rejections come at once; the held requests never answer. Wait
	// until a probe request, sent after them all, is answered: nginx
	// works through one worker's connections in order.
	probe, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	fmt.Fprintf(probe, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", zoneKey(n)) //nolint:errcheck
	probe.SetReadDeadline(time.Now().Add(30 * time.Second))                                   //nolint:errcheck
	if _, err := bufio.NewReader(probe).ReadString('\n'); err != nil {
		t.Fatalf("probe after %d held requests: %v", n, err)
	}
	// Every rejection is in its socket by now: what has not answered
	// within another second is held.
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(time.Second)) //nolint:errcheck
	}
	wg.Wait()
	return n - int(rejected.Load())
}

// nginxReqCapacity is rememberedKeys for nginx at addr, whose zone is
// made by writeZoneNginx.
func nginxReqCapacity(t *testing.T, addr string, n int) int {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	get := func(i int) int {
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", zoneKey(i)) //nolint:errcheck
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request for %s: %v", zoneKey(i), err)
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck
		resp.Body.Close()
		return resp.StatusCode
	}
	return rememberedKeys(n, func(i int, first bool) bool {
		s := get(i)
		if first && s != 200 {
			t.Fatalf("first request for %s: status %d, want 200", zoneKey(i), s)
		}
		return s != 503
	})
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"10m", 10 << 20},
		{"10M", 10 << 20},
		{"512k", 512 << 10},
		{"512K", 512 << 10},
		{"1048576", 1048576},
		{"0", 0},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "m", "10g", "10mb", "-1", "1.5m", "99999999999999999m", " 1"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) succeeded, want an error", bad)
		} else if !strings.Contains(err.Error(), "e.g. 10m") {
			t.Errorf("ParseSize(%q) error %q gives no example", bad, err)
		}
	}
}

func TestZoneModel(t *testing.T) {
	tests := []struct {
		zone      string
		head, key int
		min, max  int64
	}{
		{"10m", connNodeHead, 10, 155_000, 165_000}, // nginx: 10m ≈ 160,000 short keys
		{"1m", connNodeHead, 4, 16_000, 16_500},
		{"10m", reqNodeHead, 16, 78_000, 82_000},
	}
	for _, tt := range tests {
		size, _ := ParseSize(tt.zone)
		budget := connZoneBudget
		if tt.head == reqNodeHead {
			budget = reqZoneBudget
		}
		n := budget(size) / nodeCost(tt.head+tt.key)
		if n < tt.min || n > tt.max {
			t.Errorf("zone %s holds %d nodes of a %d-byte key, want %d..%d", tt.zone, n, tt.key, tt.min, tt.max)
		}
	}
	for _, tt := range []struct {
		n    int
		want int64
	}{{36, 64}, {64, 64}, {65, 128}, {291, 512}, {2048, 2048}, {2049, 4096}, {80 + 65535, 65536 + 4096}} {
		if got := nodeCost(tt.n); got != tt.want {
			t.Errorf("nodeCost(%d) = %d, want %d", tt.n, got, tt.want)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	seeds := []string{"10m", "512k", "1048576", "", "m", "9223372036854775807", "8796093022208m"}
	parsetest.Fuzz(f, "ParseSize", seeds, ParseSize, func(s string, n int64) error {
		if n < 0 {
			return errors.New("negative")
		}
		if digits := strings.TrimRight(s, "kKmM"); len(s)-len(digits) > 1 {
			return errors.New("two units accepted")
		}
		return nil
	}, nil)
}
