package scenarios

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"stampede/workerpool"
)

// base is a small good scenario; the cases below each change one line.
const base = `name: t
duration: 1m
backend:
  workers: 2
  routes:
    - {name: page, path: /, service: 10ms}
    - {name: report, path: /report, service: "uniform:1s..2s"}
proxy:
  limit_conn: {key: $host, per_key: 2}
tenants:
  - group: sites
    count: 3
    host: site{i}.example.com
    load: {rate: 1/s, routes: {page: 1}}
  - group: user
    host: u.example.com
    load: {model: closed, users: 2, routes: {report: 1}}
slo:
  sites: ["p99 < 1s"]
`

// withLine returns base with line n (from 1) replaced by text, which may
// hold several lines.
func withLine(n int, text string) string {
	lines := strings.Split(base, "\n")
	lines[n-1] = text
	return strings.Join(lines, "\n")
}

// withoutLines returns base without lines from to to (from 1).
func withoutLines(from, to int) string {
	lines := strings.Split(base, "\n")
	return strings.Join(append(lines[:from-1:from-1], lines[to:]...), "\n")
}

// checkParseError parses src as the file name and reports, as step what,
// unless the error is an *Error containing want, or, for want "", unless
// src parses.
func checkParseError(t *testing.T, what, name, src, want string) {
	t.Helper()
	_, err := Parse(name, []byte(src))
	var se *Error
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: %v, want no error", what, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &se)):
		t.Errorf("%s: error %v, want an *Error containing %q", what, err, want)
	}
}

func TestBaseIsGood(t *testing.T) {
	sc, err := Parse("base.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sc.TenantCount(), 4; got != want {
		t.Errorf("TenantCount() = %d, want %d", got, want)
	}
}

func TestBadFiles(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		line int
		col  int // 0: not checked
		path string
		msg  string // a part of the message
	}{
		{"unknown key", withLine(4, "  wokers: 2"), 4, 3, "backend", `unknown key "wokers" (did you mean "workers"?)`},
		{"unknown key far from any", withLine(4, "  colour: red"), 4, 3, "backend", `unknown key "colour" (known: workers, backlog`},
		{"bad rate", withLine(14, "    load: {rate: fast, routes: {page: 1}}"), 14, 18, "tenants[0].load.rate", `"fast" is not a rate (want e.g. 5/s)`},
		{"rate unit", withLine(14, "    load: {rate: 5/d, routes: {page: 1}}"), 14, 18, "tenants[0].load.rate", `unknown unit "d"`},
		{"open rate zero", withLine(14, "    load: {rate: 0/s, routes: {page: 1}}"), 14, 18, "tenants[0].load.rate", "above 0"},
		{"bad duration", withLine(2, "duration: 10"), 2, 11, "duration", `"10" has no unit (want e.g. 10m)`},
		{"zero duration", withLine(2, "duration: 0s"), 2, 11, "duration", "must be above 0"},
		{"unknown route in a mix", withLine(14, "    load: {rate: 1/s, routes: {pages: 1}}"), 14, 32, "tenants[0].load.routes", `no route "pages" in backend.routes (did you mean "page"?) (known: page, report)`},
		{"bad weight", withLine(14, "    load: {rate: 1/s, routes: {page: -1}}"), 14, 38, "tenants[0].load.routes.page", "not above 0"},
		{"bad distribution", withLine(6, `    - {name: page, path: /, service: "normal:1s"}`), 6, 38, "backend.routes[0].service", `unknown kind "normal"`},
		{"route path", withLine(6, `    - {name: page, path: app, service: 1s}`), 6, 26, "backend.routes[0].path", `"app" is not a URL path`},
		{"per_key 0", withLine(9, "  limit_conn: {key: $host, per_key: 0}"), 9, 37, "proxy.limit_conn.per_key", "0 is below 1 (want e.g. 4, or off"},
		{"per_key word", withLine(9, "  limit_conn: {key: $host, per_key: four}"), 9, 37, "proxy.limit_conn.per_key", `"four" is not a whole number`},
		{"status 600", withLine(9, "  limit_conn: {key: $host, per_key: 2, status: 600}"), 9, 48, "proxy.limit_conn.status", "600 is over 599"},
		{"limit_conn in a list", withLine(9, "  limit_conn: [{key: $host, per_key: 2}, {per_key: 0}]"), 9, 52, "proxy.limit_conn[1].per_key", "0 is below 1"},
		{"limit_req rate", withLine(9, "  limit_req: {key: $host, rate: 10r/x}"), 9, 33, "proxy.limit_req.rate", `"10r/x" is not a rate (want e.g. 10r/s`},
		{"limit_req delay and nodelay", withLine(9, "  limit_req: {rate: 1r/s, burst: 5, delay: 2, nodelay: true}"), 9, 44, "proxy.limit_req.delay", "exclude each other"},
		{"limit key", withLine(9, "  limit_conn: {key: $hots, per_key: 2}"), 9, 21, "proxy.limit_conn.key", `unknown variable "$hots"`},
		{"zone too small", withLine(9, "  limit_conn: {per_key: 2, zone: 1k}"), 9, 34, "proxy.limit_conn.zone", `"1k" is too small`},
		{"time_scale 0", withLine(1, "time_scale: 0"), 1, 13, "time_scale", "is not in (0, 1]"},
		{"time_scale 2", withLine(1, "time_scale: 2"), 1, 13, "time_scale", "is not in (0, 1]"},
		{"duplicate group", withLine(15, "  - group: sites"), 15, 12, "tenants[1].group", `group "sites" is already tenants[0]`},
		{"bad group name", withLine(15, "  - group: user x"), 15, 12, "tenants[1].group", `"user x" is not a name`},
		{"bad SLO metric", withLine(19, `  sites: ["p98 < 1s"]`), 19, 11, "slo.sites[0]", `unknown metric "p98"`},
		{"SLO value", withLine(19, `  sites: ["ok_rate > 101%"]`), 19, 11, "slo.sites[0]", `over 100%`},
		{"SLO op", withLine(19, `  sites: ["p99 = 1s"]`), 19, 11, "slo.sites[0]", `unknown comparison "="`},
		{"SLO latency unit", withLine(19, `  sites: ["p99 < 1000"]`), 19, 11, "slo.sites[0]", `"1000" has no unit`},
		{"SLO for unknown group", withLine(19, `  site: ["p99 < 1s"]`), 19, 3, "slo", `no tenant group "site" (did you mean "sites"?)`},
		{"closed model without users", withLine(17, "    load: {model: closed, routes: {report: 1}}"), 17, 11, "tenants[1].load.users", "missing (want e.g. users: 8)"},
		{"open field on a closed model", withLine(17, "    load: {model: closed, users: 2, rate: 1/s, routes: {report: 1}}"), 17, 37, "tenants[1].load", "rate is for the open model"},
		{"bad model", withLine(17, "    load: {model: half-open, users: 2, routes: {report: 1}}"), 17, 19, "tenants[1].load.model", `"half-open" is not open, closed or trace`},
		{"mix required with several routes", withLine(14, "    load: {rate: 1/s}"), 14, 11, "tenants[0].load.routes", "the backend has several routes"},
		{"bad host template", withLine(13, "    host: site{n}.example.com"), 13, 11, "tenants[0].host", "unknown placeholder {n}"},
		{"unclosed host template", withLine(13, "    host: site{i.example.com"), 13, 11, "tenants[0].host", "{ without }"},
		{"empty host", withLine(13, `    host: ""`), 13, 11, "tenants[0].host", "is empty"},
		{"host with a slash", withLine(13, `    host: site{i}/x`), 13, 11, "tenants[0].host", `holds '/'`},
		{"duplicate host", withLine(13, "    hosts: [a.example.com, b.example.com, a.example.com]"), 13, 43, "tenants[0].hosts[2]", `host "a.example.com" is already hosts[0]; each tenant has its own`},
		{"non-loopback addr", withLine(12, "    addr: 10.0.0.1"), 12, 11, "tenants[0].addr", "is not on loopback"},
		{"addr template past 255", withLine(12, "    count: 300\n    addr: 127.0.0.{i}"), 13, 11, "tenants[0].addr", `tenant 256's address "127.0.0.256" is not an IP address`},
		{"count 0", withLine(12, "    count: 0"), 12, 12, "tenants[0].count", "0 is below 1"},
		{"workers 0", withLine(4, "  workers: 0"), 4, 12, "backend.workers", "0 is below 1"},
		{"wrong type", withLine(4, "  workers: [1, 2]"), 4, 12, "backend.workers", "a list is not a single value (want e.g. 8)"},
		{"tenants not a list", strings.Replace(base, "tenants:\n", "tenants: many\nold:\n", 1), 10, 10, "tenants", "want a list"},
		{"duplicate key", withLine(12, "    host: x.example.com"), 13, 5, "tenants[0]", `key "host" appears twice (first on line 12)`},
		{"start after the end", withLine(17, "    load: {model: closed, users: 2, start: 2m, routes: {report: 1}}"), 17, 44, "tenants[1].load.start", "is not before the end of the run at 1m"},
		{"stop before start", withLine(17, "    load: {model: closed, users: 2, start: 30s, stop: 10s, routes: {report: 1}}"), 17, 55, "tenants[1].load.stop", "is not after start 30s"},
		{"stage without rate", withLine(14, "    load: {stages: [{duration: 10s}], routes: {page: 1}}"), 14, 21, "tenants[0].load.stages[0].rate", "missing"},
		{"misspelt backend", withLine(3, "backnd:"), 3, 1, "", `unknown key "backnd" (did you mean "backend"?)`},
		{"bad on_client_abort", withLine(4, "  on_client_abort: ignore"), 4, 20, "backend.on_client_abort", `"ignore" is not continue or cancel`},
		{"missing backend", withoutLines(3, 7), 1, 1, "backend", "missing (want e.g. backend: {workers: 8"},
		{"bad YAML syntax", withLine(14, "    load: {rate: 1/s, routes: {page: 1}"), 14, 0, "", "bad YAML"},
		{"tab indentation", withLine(4, "\tworkers: 2"), 4, 0, "", "bad YAML"},
		{"sweep value", base + "sweep:\n  - {path: proxy.limit_conn.per_key, values: [off, 2, 0]}\n", 21, 55, "sweep[0].values[2]", "proxy.limit_conn.per_key=0: proxy.limit_conn.per_key: 0 is below 1"},
		{"sweep path", base + "sweep:\n  - {path: tenants.nobody.load.users, values: [1]}\n", 21, 48, "sweep[0].values[0]", `tenants has no element "nobody"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc, err := Parse("bad.yaml", []byte(c.yaml))
			if err == nil {
				t.Fatalf("Parse = %+v, nil; want an error", sc)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v is not an *Error", err, err)
			}
			if e.Line != c.line || (c.col != 0 && e.Col != c.col) || e.Path != c.path || !strings.Contains(e.Msg, c.msg) {
				t.Errorf("got %d:%d path %q msg %q\nwant %d:%d path %q msg containing %q\n(all: %v)", e.Line, e.Col, e.Path, e.Msg, c.line, c.col, c.path, c.msg, err)
			}
			where := fmt.Sprintf("scenario bad.yaml:%d:", c.line)
			if c.col == 0 {
				where = fmt.Sprintf("scenario bad.yaml:%d: ", c.line)
			}
			if !strings.HasPrefix(err.Error(), where) {
				t.Errorf("Error() = %q, want it to start with %q", err, where)
			}
		})
	}
}

func TestErrorFormat(t *testing.T) {
	_, err := Parse("stock.yaml", []byte(withLine(14, "    load: {rate: fast, routes: {page: 1}}")))
	want := `scenario stock.yaml:14:18: tenants[0].load.rate: "fast" is not a rate (want e.g. 5/s)`
	if err == nil || err.Error() != want {
		t.Errorf("Error() = %v\nwant       %s", err, want)
	}
}

func TestSeveralErrors(t *testing.T) {
	src := withLine(4, "  workers: many")
	src = strings.Replace(src, "rate: 1/s", "rate: fast", 1)
	src = strings.Replace(src, "users: 2", "users: 0", 1)
	_, err := Parse("bad.yaml", []byte(src))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an *Error", err)
	}
	var got []int
	for _, x := range e.All() {
		got = append(got, x.Line)
	}
	if want := []int{4, 14, 17}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lines of the errors = %v, want %v\n%v", got, want, err)
	}
	if n := strings.Count(err.Error(), "\n"); n != 2 {
		t.Errorf("Error() has %d newlines, want 2:\n%v", n, err)
	}
}

func TestErrorWrapsCause(t *testing.T) {
	_, err := Parse("bad.yaml", []byte(withLine(6, `    - {name: page, path: /, service: "exp:0s"}`)))
	if !errors.Is(err, workerpool.ErrDist) {
		t.Errorf("errors.Is(%v, ErrDist) = false, want true", err)
	}
}

func TestEmptyAndOdd(t *testing.T) {
	for _, c := range []struct {
		src, msg string
	}{
		{"", "the file is empty"},
		{"# just a comment\n", "the file is empty"},
		{"- a\n- b\n", "is not a mapping"},
		{"name: a\n---\nname: b\n", "a second YAML document"},
		{"42", "is not a mapping"},
		{"a: &x [*x]\n", `unknown key "a"`},
	} {
		_, err := Parse("odd.yaml", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", c.src, err, c.msg)
		}
	}
}
