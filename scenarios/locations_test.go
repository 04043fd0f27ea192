package scenarios

import (
	"errors"
	"strings"
	"testing"
)

func TestLocations(t *testing.T) {
	sc, err := LoadWith("testdata/locations.yaml", []string{"proxy.locations[0].limit_conn.per_key=4"})
	if err != nil {
		t.Fatal(err)
	}
	locs := sc.Proxy.Limits.Locations
	if len(locs) != 2 {
		t.Fatalf("%d locations, want 2", len(locs))
	}
	if got := locs[0]; strings.Join(got.Paths, " ") != "/api/method/stock_balance" || len(got.Conn) != 1 || got.Conn[0].PerKey != 4 || got.Conn[0].Status != 429 || len(got.Req) != 0 {
		t.Errorf("locations[0] = %+v, want /api/method/stock_balance with limit_conn $host 4 (the --set) status 429", got)
	}
	if got := locs[1]; strings.Join(got.Paths, " ") != "/api/method/login /login" || len(got.Req) != 1 || got.Req[0].Key != "$binary_remote_addr$arg_usr" || got.Req[0].Zone != "10m" {
		t.Errorf("locations[1] = %+v, want two paths and limit_req on $binary_remote_addr$arg_usr with the default zone", got)
	}
	// Format writes them back; the result reads as the same scenario.
	out, again := formatted(t, sc)
	if diff := diffScenarios(again, sc); diff != "" {
		t.Errorf("round trip changed the scenario:\n%s\n%s", diff, out)
	}
}

func TestBadLocations(t *testing.T) {
	head := "name: t\nduration: 1m\nbackend: {routes: [{name: page, path: /, service: 10ms}]}\ntenants: [{group: a, host: a, load: {rate: 1/s, routes: {page: 1}}}]\nproxy:\n  locations:\n"
	for _, c := range []struct {
		name, yaml string
		line, col  int
		path, msg  string
	}{
		{"no path", "    - limit_conn: {key: $host, per_key: 2}\n", 7, 7, "proxy.locations[0].path", "missing (want e.g. path: /api/method/stock_balance)"},
		{"relative path", "    - {path: api, limit_conn: {key: $host, per_key: 2}}\n", 7, 14, "proxy.locations[0].path", `"api" does not start with "/"`},
		{"duplicate path", "    - {path: /a}\n    - {path: [/b, /a]}\n", 8, 19, "proxy.locations[1].path[1]", `"/a" is proxy.locations[0].path already`},
		{"unknown key", "    - {path: /a, limit_con: {key: $host, per_key: 2}}\n", 7, 18, "proxy.locations[0]", `unknown key "limit_con" (did you mean "limit_conn"?)`},
		{"bad limit", "    - {path: /a, limit_conn: {key: $host, per_key: 0}}\n", 7, 0, "proxy.locations[0].limit_conn.per_key", "0 is below 1"},
		{"bad key", "    - {path: /a, limit_req: {key: $arg_, rate: 1r/s}}\n", 7, 0, "proxy.locations[0].limit_req.key", `unknown variable "$arg_"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("bad.yaml", []byte(head+c.yaml))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v is not an *Error", err, err)
			}
			if e.Line != c.line || (c.col != 0 && e.Col != c.col) || e.Path != c.path || !strings.Contains(e.Msg, c.msg) {
				t.Errorf("got %d:%d path %q msg %q\nwant %d:%d path %q msg containing %q\n(all: %v)", e.Line, e.Col, e.Path, e.Msg, c.line, c.col, c.path, c.msg, err)
			}
		})
	}
}

func TestDotIndexes(t *testing.T) {
	for in, want := range map[string]string{
		"proxy.locations[0].limit_conn.per_key": "proxy.locations.0.limit_conn.per_key",
		"tenants[1][2].x":                       "tenants.1.2.x",
		"a[x].b":                                "a[x].b",
		"plain.path":                            "plain.path",
	} {
		if got := dotIndexes(in); got != want {
			t.Errorf("dotIndexes(%q) = %q, want %q", in, got, want)
		}
	}
}
