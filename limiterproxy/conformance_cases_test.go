package limiterproxy

import (
	"slices"
	"time"

	"stampede/limit"
)

// The patterns TestConformanceWithNginx plays at nginx and at stampede.

// confReq is one request of a pattern.
type confReq struct {
	host   string
	addr   string // client source address; "" means 127.0.0.1
	tenant string // X-Tenant header; "" means none
	path   string // /hold, /, /kill or /hang
}

func (r confReq) group() string {
	addr := r.addr
	if addr == "" {
		addr = "127.0.0.1"
	}
	return r.host + " from " + addr + " tenant=" + r.tenant + " " + r.path
}

type confCase struct {
	name        string
	cfg         limit.Config
	readTimeout time.Duration
	waves       [][]confReq
	want        []map[int]int // per wave, the statuses both must give (a check on the test itself)
}

func reqs(n int, r confReq) []confReq { return slices.Repeat([]confReq{r}, n) }

func concat(parts ...[]confReq) []confReq { return slices.Concat(parts...) }

var confCases = []confCase{
	{
		name: "limit_conn per host",
		cfg:  limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 2}}},
		waves: [][]confReq{concat(
			reqs(3, confReq{host: "site1", path: "/hold"}),
			reqs(3, confReq{host: "site2", path: "/hold"}),
		)},
		want: []map[int]int{{200: 4, 503: 2}},
	},
	{
		name: "limit_conn per address",
		cfg:  limit.Config{Conn: []limit.ConnSpec{{Key: "$binary_remote_addr", PerKey: 1, Status: 429}}},
		waves: [][]confReq{concat(
			reqs(2, confReq{host: "site1", addr: "127.0.0.2", path: "/hold"}),
			reqs(2, confReq{host: "site1", addr: "127.0.0.3", path: "/hold"}),
			reqs(1, confReq{host: "site1", addr: "127.0.0.4", path: "/hold"}),
		)},
		want: []map[int]int{{200: 3, 429: 2}},
	},
	{
		name: "two limits at once",
		cfg:  limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 3}, {Key: "$binary_remote_addr", PerKey: 2}}},
		waves: [][]confReq{
			reqs(3, confReq{host: "site1", addr: "127.0.0.2", path: "/hold"}), // the address limit
			reqs(2, confReq{host: "site1", addr: "127.0.0.3", path: "/hold"}), // then the host limit
			reqs(2, confReq{host: "site2", addr: "127.0.0.3", path: "/hold"}), // the address limit again
		},
		want: []map[int]int{{200: 2, 503: 1}, {200: 1, 503: 1}, {200: 1, 503: 1}},
	},
	{
		name: "empty key is not counted",
		cfg:  limit.Config{Conn: []limit.ConnSpec{{Key: "$http_x_tenant", PerKey: 1}}},
		waves: [][]confReq{
			reqs(3, confReq{host: "site1", path: "/hold"}),
			reqs(2, confReq{host: "site1", tenant: "acme", path: "/hold"}),
		},
		want: []map[int]int{{200: 3}, {200: 1, 503: 1}},
	},
	{
		name:  "dry run",
		cfg:   limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 1, DryRun: true}}},
		waves: [][]confReq{reqs(3, confReq{host: "site1", path: "/hold"})},
		want:  []map[int]int{{200: 3}},
	},
	{
		name: "limit_req burst nodelay, one at a time",
		cfg:  limit.Config{Req: []limit.ReqSpec{{Key: "$host", Rate: "2r/s", Burst: 3, NoDelay: true}}},
		waves: [][]confReq{
			{{host: "site1", path: "/"}}, {{host: "site1", path: "/"}}, {{host: "site1", path: "/"}},
			{{host: "site1", path: "/"}}, {{host: "site1", path: "/"}}, {{host: "site1", path: "/"}},
			{{host: "site2", path: "/"}},
		},
		want: []map[int]int{{200: 1}, {200: 1}, {200: 1}, {200: 1}, {503: 1}, {503: 1}, {200: 1}},
	},
	{
		name:  "limit_req burst nodelay, simultaneous",
		cfg:   limit.Config{Req: []limit.ReqSpec{{Key: "$host", Rate: "2r/s", Burst: 3, NoDelay: true}}},
		waves: [][]confReq{reqs(6, confReq{host: "site1", path: "/"})},
		want:  []map[int]int{{200: 4, 503: 2}},
	},
	{
		name:  "limit_req burst with delay",
		cfg:   limit.Config{Req: []limit.ReqSpec{{Key: "$host", Rate: "4r/s", Burst: 2, Status: 429}}},
		waves: [][]confReq{reqs(4, confReq{host: "site1", path: "/"})},
		want:  []map[int]int{{200: 3, 429: 1}},
	},
	{
		name:  "limit_req delay=N",
		cfg:   limit.Config{Req: []limit.ReqSpec{{Key: "$host", Rate: "5r/s", Burst: 5, Delay: 2}}},
		waves: [][]confReq{reqs(7, confReq{host: "site1", path: "/"})},
		want:  []map[int]int{{200: 6, 503: 1}},
	},
	{
		name: "limit_req then limit_conn",
		cfg: limit.Config{
			Req:  []limit.ReqSpec{{Key: "$host", Rate: "2r/s", Burst: 4, NoDelay: true}},
			Conn: []limit.ConnSpec{{Key: "$host", PerKey: 2}},
		},
		waves: [][]confReq{reqs(6, confReq{host: "site1", path: "/hold"})},
		want:  []map[int]int{{200: 2, 503: 4}},
	},
	{
		name:  "502 on a killed worker",
		cfg:   limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 4}}},
		waves: [][]confReq{reqs(2, confReq{host: "site1", path: "/kill"})},
		want:  []map[int]int{{502: 2}},
	},
	// nginx-tests limit_conn.t: a location without limit_conn of its own
	// counts in the server's zone; one with its own counts in its own,
	// with its own status.
	{
		name: "limit_conn.t: locations and inheritance",
		cfg: limit.Config{
			Conn: addrConns(1, 0),
			Locations: []limit.Location{
				{Paths: []string{"/zone"}, Conn: addrConns(1, 0)},
				{Paths: []string{"/unlim"}, Conn: addrConns(5, 0)},
				{Paths: []string{"/custom"}, Conn: addrConns(1, 501)},
			},
		},
		waves: [][]confReq{
			{{host: "site1", path: "/w/hold"}},
			{{host: "site1", path: "/1"}, {host: "site1", path: "/zone"}, {host: "site1", path: "/unlim"}},
			{{host: "site1", path: "/custom/hold"}},
			{{host: "site1", path: "/custom"}, {host: "site1", path: "/unlim/hold"}},
		},
		want: []map[int]int{{200: 1}, {200: 2, 503: 1}, {200: 1}, {200: 1, 501: 1}},
	},
	// The longest prefix wins; each kind is inherited on its own.
	{
		name: "locations: longest prefix, inheritance per kind",
		cfg: limit.Config{
			Conn: []limit.ConnSpec{{Key: "$host", PerKey: 1}},
			Locations: []limit.Location{
				{Paths: []string{"/report"}, Conn: []limit.ConnSpec{{Key: "$host", PerKey: 2}}},
				{Paths: []string{"/report/x"}, Conn: []limit.ConnSpec{{Key: "$host", PerKey: 3}}},
				{Paths: []string{"/login", "/signin"}, Req: []limit.ReqSpec{{Key: "$host", Rate: "1r/m", NoDelay: true, Status: 429}}},
			},
		},
		waves: [][]confReq{
			concat(reqs(3, confReq{host: "site1", path: "/report/hold"}), reqs(4, confReq{host: "site4", path: "/report/x/hold"})),
			reqs(2, confReq{host: "site1", path: "/hold"}),
			{{host: "site2", path: "/login/hold"}},
			{{host: "site2", path: "/signin"}},
			{{host: "site3", path: "/login"}},
			{{host: "site3", path: "/signin"}},
		},
		want: []map[int]int{{200: 5, 503: 2}, {200: 1, 503: 1}, {200: 1}, {429: 1}, {200: 1}, {429: 1}},
	},
	// nginx-tests limit_conn_complex.t: $arg_ in a key, and nginx's
	// $arg_: the first argument of the name with "=", any case, raw.
	{
		name: "limit_conn_complex.t: $arg_ keys",
		cfg:  limit.Config{Conn: []limit.ConnSpec{{Key: "$binary_remote_addr$arg_c", PerKey: 1}}},
		waves: [][]confReq{
			{{host: "site1", path: "/w/hold"}},
			{{host: "site1", path: "/"}, {host: "site1", path: "/?c=2"}},
			{{host: "site1", path: "/w/hold?C=x%20y&c=z"}},
			{{host: "site1", path: "/?c=x%20y"}, {host: "site1", path: "/?c=x+y"}, {host: "site1", path: "/?a=1&c=x%20y"}, {host: "site1", path: "/?c&c=z"}, {host: "site1", path: "/?cc=x%20y"}},
		},
		want: []map[int]int{{200: 1}, {200: 1, 503: 1}, {200: 1}, {200: 2, 503: 3}},
	},
	// nginx-tests limit_req2.t: two limits on $arg_ keys; no key, no limit.
	{
		name: "limit_req2.t: $arg_ keys, two limits",
		cfg:  limit.Config{Req: []limit.ReqSpec{{Key: "$arg_b", Rate: "1000r/s", NoDelay: true}, {Key: "$arg_a", Rate: "1r/m", NoDelay: true}}},
		waves: [][]confReq{
			{{host: "site1", path: "/t1?a=1"}}, {{host: "site1", path: "/t1?a=1"}},
			{{host: "site1", path: "/t1?a=2&b=2"}}, {{host: "site1", path: "/t1?a=2&b=9"}},
			{{host: "site1", path: "/t1"}}, {{host: "site1", path: "/t1"}},
			{{host: "site1", path: "/t1?b=3"}},
		},
		want: []map[int]int{{200: 1}, {503: 1}, {200: 1}, {503: 1}, {200: 1}, {200: 1}, {200: 1}},
	},
	// nginx-tests limit_req_delay.t: delay=1 burst=2 at 30r/m: the second
	// request is not delayed, the third is, a fourth beside it is
	// rejected.
	{
		name: "limit_req_delay.t: two-stage",
		cfg:  limit.Config{Req: []limit.ReqSpec{{Key: "$binary_remote_addr", Rate: "30r/m", Burst: 2, Delay: 1}}},
		waves: [][]confReq{
			{{host: "site1", path: "/delay.html"}},
			{{host: "site1", path: "/delay.html"}},
			reqs(2, confReq{host: "site1", path: "/delay.html"}),
		},
		want: []map[int]int{{200: 1}, {200: 1}, {200: 1, 503: 1}},
	},
	// nginx-tests limit_req_dry_run.t, with stampede's locations: the
	// server's limits in dry run let everything through, and are never
	// waited for (a delay here would be 60 s and the wave would not
	// settle); a location with an enforced limit of its own rejects.
	{
		name: "limit_req_dry_run.t: dry run, and a location with it off",
		cfg: limit.Config{
			Req: []limit.ReqSpec{{Key: "$binary_remote_addr", Rate: "1r/m", Burst: 2, DryRun: true}},
			Locations: []limit.Location{
				{Paths: []string{"/reject/off"}, Req: []limit.ReqSpec{{Key: "$binary_remote_addr", Rate: "1r/m"}}},
			},
		},
		waves: [][]confReq{
			{{host: "site1", path: "/delay"}}, {{host: "site1", path: "/delay"}}, {{host: "site1", path: "/delay"}},
			{{host: "site1", path: "/delay"}}, {{host: "site1", path: "/delay"}},
			{{host: "site1", path: "/reject/off"}}, {{host: "site1", path: "/reject/off"}},
		},
		want: []map[int]int{{200: 1}, {200: 1}, {200: 1}, {200: 1}, {200: 1}, {200: 1}, {503: 1}},
	},
	// nginx-tests limit_conn_dry_run.t: a dry-run location lets through
	// what an enforced one rejects.
	{
		name: "limit_conn_dry_run.t: dry run beside an enforced location",
		cfg: limit.Config{
			Conn: []limit.ConnSpec{{Key: "$binary_remote_addr", PerKey: 1}},
			Locations: []limit.Location{
				{Paths: []string{"/dry"}, Conn: []limit.ConnSpec{{Key: "$binary_remote_addr", PerKey: 1, DryRun: true}}},
			},
		},
		waves: [][]confReq{
			reqs(2, confReq{host: "site1", path: "/reject/hold"}),
			reqs(2, confReq{host: "site1", path: "/dry/hold"}),
		},
		want: []map[int]int{{200: 1, 503: 1}, {200: 2}},
	},
	{
		name:        "504 on read timeout",
		cfg:         limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 4}}},
		readTimeout: 300 * time.Millisecond,
		waves:       [][]confReq{reqs(2, confReq{host: "site1", path: "/hang"})},
		want:        []map[int]int{{504: 2}},
	},
}

// addrConns is one limit_conn $binary_remote_addr of n, answering status
// (0: the default) over it.
func addrConns(n, status int) []limit.ConnSpec {
	return []limit.ConnSpec{{Key: "$binary_remote_addr", PerKey: n, Status: status}}
}
