package limiterproxy

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"stampede/internal/golden"
	"stampede/internal/nginxtest"
	"stampede/limit"
)

var nginxCases = []struct {
	name string
	cfg  limit.Config
	opts NginxOptions
}{
	{"no-limits", limit.Config{}, NginxOptions{}},
	{"conn-host", limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 4}}},
		NginxOptions{Listen: "127.0.0.1:8080", Upstream: "http://127.0.0.1:9000", ReadTimeout: 120 * time.Second}},
	{"upstream-keepalive", limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 4}}},
		NginxOptions{Upstream: "127.0.0.1:9000", ReadTimeout: 120 * time.Second, UpstreamKeepAlive: 32}},
	{"two-limits", limit.Config{
		Req: []limit.ReqSpec{{Key: "binary_remote_addr", Rate: "10r/s", Burst: 20, NoDelay: true, Zone: "1m"}},
		Conn: []limit.ConnSpec{
			{Key: "$host", PerKey: 4, Status: 429},
			{Key: "$http_x_tenant", PerKey: 2, Status: 429, Zone: "16k"},
		},
	}, NginxOptions{Listen: "127.0.0.1:8081", Upstream: "127.0.0.1:9001", ReadTimeout: 30 * time.Second}},
	{"req-delay-dry-run", limit.Config{
		Req: []limit.ReqSpec{{Key: "$host", Rate: "5r/s", Burst: 12, Delay: 8, DryRun: true}},
	}, NginxOptions{ReadTimeout: time.Minute}},
	{"time-scale", limit.Config{
		Req: []limit.ReqSpec{
			{Key: "$host", Rate: "1r/s", Burst: 5, NoDelay: true},
			{Key: "$remote_addr", Rate: "30r/m", Burst: 2},
			{Key: "$http_x_tenant", Rate: "7r/m"},
		},
		Conn: []limit.ConnSpec{{Key: "$host", PerKey: 4}},
	}, NginxOptions{ReadTimeout: 120 * time.Second, TimeScale: 0.3}},
	{"locations", limit.Config{
		Req:  []limit.ReqSpec{{Key: "$binary_remote_addr", Rate: "10r/s", Burst: 20, NoDelay: true, DryRun: true}},
		Conn: []limit.ConnSpec{{Key: "$host", PerKey: 8}},
		Locations: []limit.Location{
			{Paths: []string{"/api/method/stock_balance", "/api/method/general_ledger"}, Conn: []limit.ConnSpec{{Key: "$host", PerKey: 4, Status: 429}}},
			{Paths: []string{"/api/method/login"}, Req: []limit.ReqSpec{{Key: "$binary_remote_addr$arg_usr", Rate: "5r/m", Burst: 3}}},
			{Paths: []string{"/assets"}},
		},
	}, NginxOptions{ReadTimeout: 120 * time.Second}},
	{"locations-no-headers", limit.Config{
		Conn:      []limit.ConnSpec{{Key: "$host", PerKey: 8}},
		Locations: []limit.Location{{Paths: []string{"/"}, Conn: []limit.ConnSpec{{Key: "$host", PerKey: 4}}}},
	}, NginxOptions{NoHeaders: true}},
}

// TestWriteNginxGolden holds the whole configuration of every case, and
// the snippet form of the last two, to their golden files.
func TestWriteNginxGolden(t *testing.T) {
	forms := []struct {
		name  string
		write func(io.Writer, limit.Config, NginxOptions) error
		ext   string
		last  int // how many of the last cases this form is held to
	}{
		{"WriteNginx", WriteNginx, ".conf", len(nginxCases)},
		{"WriteNginxSnippet", WriteNginxSnippet, ".snippet", 2},
	}
	for _, f := range forms {
		for _, tc := range nginxCases[len(nginxCases)-f.last:] {
			t.Run(f.name+"/"+tc.name, func(t *testing.T) {
				var buf bytes.Buffer
				if err := f.write(&buf, tc.cfg, tc.opts); err != nil {
					t.Fatalf("%s: %v", f.name, err)
				}
				golden.Check(t, filepath.Join("testdata", "nginx", tc.name+f.ext), buf.Bytes())
			})
		}
	}
}

// TestWriteNginxAccepted checks every golden configuration with nginx -t.
func TestWriteNginxAccepted(t *testing.T) {
	nginx := nginxtest.Require(t)
	for _, tc := range nginxCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			conf := filepath.Join(dir, "nginx.conf")
			var buf bytes.Buffer
			if err := WriteNginx(&buf, tc.cfg, tc.opts); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(conf, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(nginx, "-t", "-q", "-p", dir, "-c", conf, "-e", "stderr").CombinedOutput()
			if err != nil {
				t.Fatalf("nginx -t: %v\n%s\nconfig:\n%s", err, out, buf.String())
			}
		})
	}
}

func TestWriteNginxContents(t *testing.T) {
	var buf bytes.Buffer
	cfg := limit.Config{Req: []limit.ReqSpec{{Key: "$host", Rate: "1r/s", Burst: 5, NoDelay: true}}, Conn: []limit.ConnSpec{{Key: "host", PerKey: 4}}}
	if err := WriteNginx(&buf, cfg, NginxOptions{Listen: "127.0.0.1:1", Upstream: "127.0.0.1:2", ReadTimeout: 2 * time.Minute, TimeScale: 0.01}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{
		"limit_conn_zone $host zone=stampede_conn0:10m;",
		"limit_req_zone $host zone=stampede_req0:10m rate=100r/s;",
		"limit_req zone=stampede_req0 burst=5 nodelay;",
		"limit_conn stampede_conn0 4;",
		"limit_conn_status 503;",
		"limit_req_status 503;",
		"listen 127.0.0.1:1;",
		"proxy_pass http://127.0.0.1:2;",
		"proxy_set_header Host $host;",
		"proxy_read_timeout 1200ms;",
		"add_header X-Stampede-Limit $stampede_limit_conn always;",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("step %d: config lacks %q:\n%s", i, want, buf.String())
		}
	}
	if strings.Contains(buf.String(), "dry_run on") {
		t.Errorf("config has a dry_run without any limit in dry-run mode")
	}
}

func TestWriteNginxErrors(t *testing.T) {
	tests := []struct {
		cfg  limit.Config
		opts NginxOptions
		want string
	}{
		{limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 4}, {Key: "$remote_addr", PerKey: 2, Status: 429}}}, NginxOptions{},
			"limit_conn[0] answers 503 but limit_conn[1] answers 429"},
		{limit.Config{Req: []limit.ReqSpec{{Key: "$host", Rate: "1r/s", DryRun: true}, {Key: "$remote_addr", Rate: "1r/s"}}}, NginxOptions{},
			"limit_req[0] has dry_run=true but limit_req[1] has dry_run=false"},
		{limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 0}}}, NginxOptions{}, "limit_conn[0]: per-key limit 0"},
		{limit.Config{Req: []limit.ReqSpec{{Key: "$host", Rate: "fast"}}}, NginxOptions{}, "limit_req[0]"},
		{limit.Config{Conn: []limit.ConnSpec{{Key: "$nope", PerKey: 1}}}, NginxOptions{}, "limit_conn[0]: key"},
		{limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 1, Status: 302}}}, NginxOptions{}, "status 302"},
		{limit.Config{}, NginxOptions{TimeScale: -1}, "time scale -1"},
		{limit.Config{}, NginxOptions{Upstream: "127.0.0.1:9000/app"}, "is not a host:port"},
		{limit.Config{Locations: []limit.Location{{Paths: []string{"/a"}, Conn: []limit.ConnSpec{{Key: "$host", PerKey: 1}, {Key: "$host", PerKey: 2, DryRun: true}}}}}, NginxOptions{},
			"locations[0].limit_conn[0] has dry_run=false but locations[0].limit_conn[1] has dry_run=true"},
		{limit.Config{Locations: []limit.Location{{Paths: []string{"a"}}}}, NginxOptions{}, `does not start with "/"`},
	}
	for i, tt := range tests {
		var buf bytes.Buffer
		err := WriteNginx(&buf, tt.cfg, tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("step %d: WriteNginx error = %v, want one containing %q", i, err, tt.want)
		}
		if buf.Len() != 0 {
			t.Errorf("step %d: WriteNginx wrote %d bytes along with an error", i, buf.Len())
		}
	}
}

func TestNginxRate(t *testing.T) {
	tests := []struct {
		mr    float64 // milli-requests per second
		want  string
		exact bool
	}{
		{1000, "1r/s", true},
		{100000, "100r/s", true},
		{500, "30r/m", true},
		{16, "1r/m", true},
		{333, "20r/m", true},
		{1500, "90r/m", true},
		{386.666, "23r/m", false},
		{2, "1r/m", false},
		{123456.7, "123r/s", false},
	}
	for i, tt := range tests {
		got, exact := nginxRate(tt.mr)
		if got != tt.want || exact != tt.exact {
			t.Errorf("step %d: nginxRate(%v) = %q, %t; want %q, %t", i, tt.mr, got, exact, tt.want, tt.exact)
		}
	}
}
