package limit

import (
	"strings"
	"testing"
)

// TestNormalizePath normalizes each path of a row to the row's want.
func TestNormalizePath(t *testing.T) {
	for _, tt := range []struct {
		want string
		ins  []string
	}{
		{"/", []string{"", "/"}},
		{"/api/method/x", []string{"/api/method/x"}},
		{"/api/method", []string{"//api///method", "/api/./method", "/api/x/../method"}},
		{"/api", []string{"/../../api"}},
		{"/api/", []string{"/api/", "/api/.", "/api/x/.."}},
		{"/a..b/.c", []string{"/a..b/.c"}},
	} {
		for _, in := range tt.ins {
			if got := normalizePath(in); got != tt.want {
				t.Errorf("normalizePath(%q) = %q, want %q", in, got, tt.want)
			}
		}
	}
}

func TestLocationOf(t *testing.T) {
	p := mustPolicy(t, Config{
		Conn: []ConnSpec{{Key: "$host", PerKey: 1}},
		Locations: []Location{
			{Paths: []string{"/api"}, Req: []ReqSpec{{Key: "$host", Rate: "1r/s"}}},
			{Paths: []string{"/api/method/stock_balance", "/report"}, Conn: []ConnSpec{{Key: "$host", PerKey: 4}}},
		},
	})
	for _, tt := range []struct {
		path string
		want int
	}{
		{"/", -1},
		{"/login", -1},
		{"/api", 0},
		{"/apix", 0}, // nginx's prefixes are bytes, not path segments
		{"/api/method/stock_balance", 1},
		{"/api/method/stock_balance/x", 1},
		{"/api/method/stock", 0},
		{"//api//method/stock_balance", 1},
		{"/x/../api/method/stock_balance", 1},
		{"/API", -1}, // case-sensitive
		{"/report", 1},
	} {
		if got := p.LocationOf(tt.path); got != tt.want {
			t.Errorf("LocationOf(%q) = %d, want %d", tt.path, got, tt.want)
		}
	}
	// Inheritance per kind: location 0 has its own limit_req and the
	// server's limit_conn, the very same rules; location 1 its own
	// limit_conn and the server's (no) limit_req.
	l0, l1 := p.For("/api"), p.For("/report")
	if len(l0.Conn) != 1 || l0.Conn[0].Limiter != p.Conn[0].Limiter || len(l0.Req) != 1 || l0.Req[0].Name != "locations[0].limit_req[0]" {
		t.Errorf("location 0: conn %v req %v, want the server's limit_conn and its own limit_req", l0.Conn, l0.Req)
	}
	if len(l1.Conn) != 1 || l1.Conn[0].Limiter == p.Conn[0].Limiter || l1.Conn[0].Spec.PerKey != 4 || len(l1.Req) != 0 {
		t.Errorf("location 1: conn %v req %v, want its own limit_conn and no limit_req", l1.Conn, l1.Req)
	}
	if p.For("/login") != p {
		t.Errorf("For(/login) is not the server's policy")
	}
}

func TestLocationErrors(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{Locations: []Location{{}}}, "locations[0].path: no path"},
		{Config{Locations: []Location{{Paths: []string{"api"}}}}, `locations[0].path[0]: "api" does not start with "/"`},
		{Config{Locations: []Location{{Paths: []string{"/a b"}}}}, `locations[0].path[0]: "/a b" has ' '`},
		{Config{Locations: []Location{{Paths: []string{"/a"}}, {Paths: []string{"/b", "/a"}}}}, `locations[1].path[1]: "/a" is locations[0]'s already`},
		{Config{Locations: []Location{{Paths: []string{"/a"}, Conn: []ConnSpec{{Key: "$host", PerKey: 0}}}}}, "locations[0].limit_conn[0].per_key: 0 is not a limit"},
	} {
		_, err := NewPolicy(tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewPolicy(%+v) error = %v, want one containing %q", tt.cfg, err, tt.want)
		}
	}
}

func TestKeysLimiter(t *testing.T) {
	if l := mustPolicy(t, Config{}).KeysLimiter(); l != nil {
		t.Errorf("no limit_conn: KeysLimiter = %v, want nil", l)
	}
	p := mustPolicy(t, Config{Locations: []Location{{Paths: []string{"/a"}}, {Paths: []string{"/report"}, Conn: []ConnSpec{{Key: "$host", PerKey: 2}}}}})
	if l := p.KeysLimiter(); l == nil || l != p.Locations[1].Policy.Conn[0].Limiter {
		t.Errorf("only a location's limit_conn: KeysLimiter = %v, want that location's", l)
	}
	p = mustPolicy(t, Config{Conn: []ConnSpec{{Key: "$host", PerKey: 1}}, Locations: []Location{{Paths: []string{"/report"}, Conn: []ConnSpec{{Key: "$host", PerKey: 2}}}}})
	if l := p.KeysLimiter(); l != p.Conn[0].Limiter {
		t.Errorf("a server limit_conn: KeysLimiter is not the server's")
	}
}

func FuzzNormalizePath(f *testing.F) {
	for _, s := range []string{"/api/method/stock_balance", "//..//x", "/a/./b/../c/", "", "x/.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		if n := normalizePath(path); n == "" || n[0] != '/' {
			t.Fatalf("normalizePath(%q) = %q, want a path that begins with \"/\"", path, n)
		}
	})
}
