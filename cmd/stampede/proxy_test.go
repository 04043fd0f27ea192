package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

func TestProxyPrintNginx(t *testing.T) {
	runWant(t, []string{"proxy", "--listen", "127.0.0.1:8088", "--upstream", "http://127.0.0.1:9009",
		"--limit-conn", "host=4", "--limit-req", "$binary_remote_addr=10r/s,burst=20,nodelay", "--status", "429", "--print-nginx"},
		"limit_conn_zone $host zone=stampede_conn0:10m;",
		"limit_req_zone $binary_remote_addr zone=stampede_req0:10m rate=10r/s;",
		"limit_conn stampede_conn0 4;",
		"limit_req zone=stampede_req0 burst=20 nodelay;",
		"limit_conn_status 429;",
		"listen 127.0.0.1:8088;",
		"proxy_pass http://127.0.0.1:9009;",
		"proxy_read_timeout 60s;")
}

// TestProxyPrintNginxKeepAlive checks that --upstream-keepalive is
// exported as nginx's upstream keepalive and what it needs.
func TestProxyPrintNginxKeepAlive(t *testing.T) {
	runWant(t, []string{"proxy", "--upstream", "http://127.0.0.1:9009", "--upstream-keepalive", "16", "--print-nginx"},
		"upstream stampede_upstream {\n        server 127.0.0.1:9009;\n        keepalive 16;\n    }",
		"proxy_pass http://stampede_upstream;\n            proxy_http_version 1.1;\n            proxy_set_header Connection \"\";",
		"--upstream-keepalive 16")
}

var listeningRE = regexp.MustCompile(`listening on (http://\S+),`)

// metricsListeningRE finds, beside where the proxy listens, where its
// --metrics server does, said on the next line.
var metricsListeningRE = regexp.MustCompile(`listening on (http://\S+),.*\n.*metrics on (http://\S+?)/metrics `)

// startProxyCLI runs `stampede proxy` in-process until the test ends and
// returns its URL.
func startProxyCLI(t *testing.T, args ...string) string {
	t.Helper()
	return startCLI(t, listeningRE, append([]string{"proxy", "--listen", "127.0.0.1:0"}, args...)...)[1]
}

func concurrentGets(t *testing.T, base string, hosts []string) map[int]int {
	t.Helper()
	type res struct {
		code int
		err  error
	}
	c := make(chan res, len(hosts))
	for _, h := range hosts {
		go func() {
			req, _ := http.NewRequest("GET", base+"/slow", nil)
			req.Host = h
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				c <- res{err: err}
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			c <- res{code: resp.StatusCode}
		}()
	}
	got := map[int]int{}
	for range hosts {
		r := <-c
		if r.err != nil {
			t.Errorf("GET: %v", r.err)
			continue
		}
		got[r.code]++
	}
	return got
}

// backendListeningRE finds where `stampede backend` listens in its first
// line.
var backendListeningRE = regexp.MustCompile(`backend listening on (\S+) `)

// TestProxyDoneWhen is the "done when" through the commands:
// `stampede backend` with 16 workers and a 1 s route (played at time scale
// 0.5) behind `stampede proxy --limit-conn '$host=4'`.
func TestProxyDoneWhen(t *testing.T) {
	backend := "http://" + startCLI(t, backendListeningRE, "backend", "--listen", "127.0.0.1:0", "--workers", "16",
		"--route", "/slow=1s", "--time-scale", "0.5")[1]
	servers := [][]string{nil}
	if runtime.GOOS == "linux" {
		servers = append(servers, []string{"--server", "epoll", "--upstream-keepalive", "8"})
	}
	for _, server := range servers {
		t.Run(strings.Join(server, " "), func(t *testing.T) { testProxyDoneWhen(t, backend, server) })
	}
}

func testProxyDoneWhen(t *testing.T, backend string, server []string) {
	base := startProxyCLI(t, append([]string{"--upstream", backend, "--limit-conn", "$host=4"}, server...)...)
	hosts := make([]string, 8)
	for i := range hosts {
		hosts[i] = "site1"
	}
	if got := concurrentGets(t, base, hosts); got[200] != 4 || got[503] != 4 {
		t.Errorf("8 concurrent for one host: %v, want 4×200 and 4×503", got)
	}
	for i := range hosts {
		hosts[i] = "site" + string(rune('1'+i))
	}
	if got := concurrentGets(t, base, hosts); got[200] != 8 {
		t.Errorf("8 concurrent for 8 hosts: %v, want 8×200", got)
	}

	reqBase := startProxyCLI(t, append([]string{"--upstream", backend, "--limit-req", "$host=1r/s,burst=5,nodelay"}, server...)...)
	for i := range hosts {
		hosts[i] = "site1"
	}
	if got := concurrentGets(t, reqBase, hosts[:7]); got[200] != 6 || got[503] != 1 {
		t.Errorf("7 simultaneous with limit_req 1r/s burst=5 nodelay: %v, want 6×200 and 1×503", got)
	}
}

func TestProxyMetricsFlag(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer backend.Close()
	// Port 0: the proxy says where its metrics listen, so no other
	// program can take a port picked for it before it listens there.
	m := startCLI(t, metricsListeningRE, "proxy", "--listen", "127.0.0.1:0", "--upstream", backend.URL,
		"--limit-conn", "$host=4", "--metrics", "127.0.0.1:0")
	base, metricsBase := m[1], m[2]
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = http.Get(metricsBase + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `stampede_limit_passed_total{key="$host",limit="limit_conn[0]"} 1`) {
		t.Errorf("/metrics after one request:\n%s", body)
	}
}

func TestProxyPrintNginxLocations(t *testing.T) {
	runWant(t, []string{"proxy", "--upstream", "http://127.0.0.1:9009",
		"--limit-conn", "$host=8", "--limit-conn", "/api/method/stock_balance,/api/method/general_ledger:$host=4",
		"--limit-req", "/api/method/login:$binary_remote_addr$arg_usr=5r/m,burst=3", "--print-nginx"},
		"limit_conn stampede_conn0 8;  # limit_conn[0]",
		"location /api/method/stock_balance {\n            limit_conn stampede_l0_conn0 4;  # locations[0].limit_conn[0]",
		"location /api/method/general_ledger {\n            limit_conn stampede_l0_conn0 4;",
		"location /api/method/login {\n            limit_req zone=stampede_l1_req0 burst=3;  # locations[1].limit_req[0]",
		"limit_req_zone $binary_remote_addr$arg_usr zone=stampede_l1_req0:10m rate=5r/m;",
		"location / {")
}

// TestProxyServerFlag checks --server's usage errors: a server it does not
// know, and epoll without upstream keep-alive.
func TestProxyServerFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--server", "uring"}, `--server "uring": want h1 (the default) or epoll`},
		{[]string{"--server", "epoll"}, "--server epoll needs --upstream-keepalive N"},
	} {
		if runtime.GOOS != "linux" && tc.args[1] == "epoll" {
			tc.want = "--server epoll: epoll is Linux's"
		}
		runRefused(t, tc.want, append([]string{"proxy", "--upstream", "http://127.0.0.1:9009"}, tc.args...)...)
	}
}
