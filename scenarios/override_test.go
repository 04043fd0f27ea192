package scenarios

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"stampede/workerpool"
)

func TestOverrides(t *testing.T) {
	cases := []struct {
		name  string
		sets  []string
		check func(*Scenario) string // what is wrong, or ""
	}{
		{"per_key off removes the limit", []string{"proxy.limit_conn.per_key=off"}, func(s *Scenario) string {
			return expect(len(s.Proxy.Limits.Conn), 0, "limit_conn count")
		}},
		{"per_key 2", []string{"proxy.limit_conn.per_key=2"}, func(s *Scenario) string {
			return expect(s.Proxy.Limits.Conn[0].PerKey, 2, "per_key") + expect(s.Proxy.Limits.Conn[0].Key, "$host", "key kept")
		}},
		{"workers", []string{"backend.workers=16"}, func(s *Scenario) string {
			return expect(s.Backend.Workers, 16, "workers")
		}},
		{"tenant by group", []string{"tenants.user-x.load.users=6"}, func(s *Scenario) string {
			return expect(s.Group("user-x").Load.Users, 6, "users")
		}},
		{"tenant by index", []string{"tenants.0.count=10"}, func(s *Scenario) string {
			return expect(s.Tenants[0].Count, 10, "count")
		}},
		{"route by index", []string{"backend.routes.1.service=uniform:1m..2m"}, func(s *Scenario) string {
			return expect(s.Backend.Routes[1].Service, workerpool.Dist(workerpool.Uniform{Min: time.Minute, Max: 2 * time.Minute}), "service")
		}},
		{"route by name", []string{"backend.routes.page.service=5ms"}, func(s *Scenario) string {
			return expect(s.Backend.Routes[0].Service, workerpool.Dist(workerpool.Constant{D: 5 * time.Millisecond}), "service")
		}},
		{"later wins", []string{"backend.workers=2", "backend.workers=3"}, func(s *Scenario) string {
			return expect(s.Backend.Workers, 3, "workers") + expect(s.Settings["backend.workers"], "3", "setting")
		}},
		{"new field", []string{"backend.on_client_abort=cancel"}, func(s *Scenario) string {
			return expect(s.Backend.OnClientAbort, workerpool.Cancel, "on_client_abort")
		}},
		{"new block", []string{"proxy.limit_req.rate=10r/s", "proxy.limit_req.burst=20"}, func(s *Scenario) string {
			r := s.Proxy.Limits.Req
			if len(r) != 1 {
				return fmt.Sprintf("limit_req = %v, want one", r)
			}
			return expect(r[0].Rate, "10r/s", "rate") + expect(r[0].Burst, 20, "burst") + expect(r[0].Key, "$host", "default key")
		}},
		{"a mapping value", []string{"tenants.user-x.load.routes={page: 1, stock-balance: 3}"}, func(s *Scenario) string {
			return expect(s.Group("user-x").Load.Routes, []WeightedRoute{{0, 1}, {1, 3}}, "routes")
		}},
		{"an empty value restores the default", []string{"backend.backlog="}, func(s *Scenario) string {
			return expect(s.Backend.Backlog, 2048, "backlog")
		}},
		{"a list of limits", []string{"proxy.limit_conn=[{key: $host, per_key: 4}, {key: $binary_remote_addr, per_key: 1}]", "proxy.limit_conn.1.per_key=2"}, func(s *Scenario) string {
			return expect(len(s.Proxy.Limits.Conn), 2, "limits") + expect(s.Proxy.Limits.Conn[1].PerKey, 2, "second per_key")
		}},
		{"value with = in it", []string{"description=a=b"}, func(s *Scenario) string {
			return expect(s.Description, "a=b", "description")
		}},
		{"slo", []string{`slo.other-sites=["p99 < 2s"]`}, func(s *Scenario) string {
			return expect(len(s.SLO), 1, "SLOs") + expect(s.SLO[0].Threshold, 2000.0, "threshold")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc, err := LoadWith("stock-balance.yaml", c.sets)
			if err != nil {
				t.Fatal(err)
			}
			if msg := c.check(sc); msg != "" {
				t.Error(msg)
			}
			for _, s := range c.sets {
				p, v, _ := strings.Cut(s, "=")
				if got, ok := sc.Settings[p]; !ok || (got != v && p != "backend.workers") {
					t.Errorf("Settings[%q] = %q, %v; want %q", p, got, ok, v)
				}
			}
		})
	}
}

func expect[T any](got, want T, what string) string {
	if reflect.DeepEqual(got, want) {
		return ""
	}
	return fmt.Sprintf("%s = %v, want %v; ", what, got, want)
}

func TestOverrideErrors(t *testing.T) {
	cases := []struct {
		set, msg string
	}{
		{"proxy.limit_conn.per_key=0", "--set proxy.limit_conn.per_key=0: proxy.limit_conn.per_key: 0 is below 1"},
		{"backend.workers=many", `--set backend.workers=many: backend.workers: "many" is not a whole number`},
		{"tenants.user-y.load.users=6", `--set tenants.user-y.load.users=6: tenants has no element "user-y" (did you mean "user-x"?) (known: other-sites, user-x; or an index from 0)`},
		{"tenants.5.count=1", "tenants has no element 5 (it has 2, from 0)"},
		{"backend.wokers=3", `--set backend.wokers=3: backend: unknown key "wokers" (did you mean "workers"?)`},
		{"backend.workers.x=3", `backend.workers is "8", not a mapping or a list, so it has no "x"`},
		{"workers", `"workers" is not PATH=VALUE`},
		{"=3", "empty path"},
		{"a..b=3", "is not a dotted path"},
		{"tenants.user-x.load.routes={nope: 1}", `--set tenants.user-x.load.routes={nope: 1}: tenants[1].load.routes: no route "nope"`},
		{"proxy.limit_conn={per_key: 2}", ""}, // fine, for the list test below
	}
	for i, c := range cases {
		_, err := LoadWith("stock-balance.yaml", []string{c.set})
		if c.msg == "" {
			if err != nil {
				t.Errorf("step %d: --set %s: %v, want no error", i, c.set, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("step %d: --set %s: error %v is not an *Error", i, c.set, err)
			continue
		}
		if e.Line != 0 || e.Set == "" || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("step %d: --set %s: got line %d set %q\n%v\nwant no line and a message containing\n%s", i, c.set, e.Line, e.Set, err, c.msg)
		}
		if !strings.HasPrefix(err.Error(), "scenario stock-balance.yaml: --set ") {
			t.Errorf("step %d: Error() = %q, want it to start with the file and the --set", i, err)
		}
	}
	// A limit_conn written as a list is addressed by index.
	_, err := ParseWith("l.yaml", []byte(strings.Replace(base, "limit_conn: {key: $host, per_key: 2}", "limit_conn: [{key: $host, per_key: 2}]", 1)), []string{"proxy.limit_conn.per_key=3"})
	if err == nil || !strings.Contains(err.Error(), "proxy.limit_conn is a list; name an element by its index, as proxy.limit_conn.0.per_key") {
		t.Errorf("per_key on a list = %v, want a hint to use proxy.limit_conn.0.per_key", err)
	}
}

// TestOverrideAliases checks that a --set into a shared (anchored) load
// changes only the tenant it names.
func TestOverrideAliases(t *testing.T) {
	src := `duration: 1m
backend: {routes: [{name: p, path: /, service: 1ms}]}
tenants:
  - {group: a, host: a.example.com, load: &l {model: closed, users: 2}}
  - {group: b, host: b.example.com, load: *l}
  - {group: c, host: c.example.com, load: {<<: *l, think: 1s}}
`
	sc, err := ParseWith("a.yaml", []byte(src), []string{"tenants.b.load.users=5", "tenants.c.load.users=7", "tenants.a.load.think=2s"})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, g := range sc.Tenants {
		got = append(got, fmt.Sprintf("%s:%d:%v", g.Group, g.Load.Users, g.Load.Think))
	}
	if want := []string{"a:2:2s", "b:5:0s", "c:7:1s"}; !reflect.DeepEqual(got, want) {
		t.Errorf("users and think = %v, want %v", got, want)
	}
}

func TestWithAndSweep(t *testing.T) {
	sc, err := LoadWith("stock-balance.yaml", []string{"backend.workers=16"})
	if err != nil {
		t.Fatal(err)
	}
	axis, err := ParseSweep("proxy.limit_conn.per_key=off,2,4,6,8")
	if err != nil {
		t.Fatal(err)
	}
	want := []int{0, 2, 4, 6, 8}
	for i, set := range axisSets(axis) {
		p, err := sc.With(set)
		if err != nil {
			t.Fatalf("step %d: With(%s): %v", i, set, err)
		}
		got := 0
		if len(p.Proxy.Limits.Conn) > 0 {
			got = p.Proxy.Limits.Conn[0].PerKey
		}
		if got != want[i] || p.Backend.Workers != 16 {
			t.Errorf("step %d: With(%s): per_key %d workers %d, want %d and 16", i, set, got, p.Backend.Workers, want[i])
		}
		if len(p.Settings) != 2 || p.Settings["proxy.limit_conn.per_key"] != axis.Values[i] {
			t.Errorf("step %d: Settings = %v", i, p.Settings)
		}
	}
	if sc.Proxy.Limits.Conn[0].PerKey != 4 {
		t.Errorf("With changed the scenario it was called on")
	}
	if _, err := sc.With("proxy.limit_conn.per_key=0"); err == nil {
		t.Errorf("With(per_key=0) = nil, want an error")
	}
	if _, err := (&Scenario{}).With("a=b"); err == nil {
		t.Errorf("With on a hand-made scenario = nil, want an error")
	}
}

func TestParseSweep(t *testing.T) {
	cases := []parseStep[Axis]{
		{"proxy.limit_conn.per_key=off,2,4", Axis{"proxy.limit_conn.per_key", []string{"off", "2", "4"}}, ""},
		{"backend.workers= 4 , 8", Axis{"backend.workers", []string{"4", "8"}}, ""},
		{`backend.routes.page.service="lognormal:median=30ms,p99=200ms",2s`, Axis{"backend.routes.page.service", []string{`"lognormal:median=30ms,p99=200ms"`, "2s"}}, ""},
		{"proxy.limit_conn=[{per_key: 1}, {per_key: 2}],off", Axis{"proxy.limit_conn", []string{"[{per_key: 1}, {per_key: 2}]", "off"}}, ""},
		{"backend.workers=4,,8", Axis{}, "empty value"},
		{"backend.workers", Axis{}, "not PATH=VALUE"},
	}
	checkParse(t, "ParseSweep", ParseSweep, func(got, want Axis) bool { return reflect.DeepEqual(got, want) }, cases, nil)
	// A quoted value holding commas goes through --set as one string.
	a, _ := ParseSweep(cases[2].in)
	sc, err := LoadWith("stock-balance.yaml", axisSets(a)[:1])
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Backend.Routes[0].Service.String(); got != "lognormal:median=30ms,p99=200ms" {
		t.Errorf("service = %s", got)
	}
}

// axisSets returns the axis as --set arguments, one per value.
func axisSets(a Axis) []string {
	out := make([]string, len(a.Values))
	for i, v := range a.Values {
		out[i] = a.Path + "=" + v
	}
	return out
}
