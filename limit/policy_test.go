package limit

import (
	"strings"
	"testing"
)

func mustPolicy(t testing.TB, cfg Config) *Policy {
	t.Helper()
	p, err := NewPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNewPolicyErrors(t *testing.T) {
	okConn := ConnSpec{Key: "$host", PerKey: 4}
	okReq := ReqSpec{Key: "$host", Rate: "10r/s"}
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Conn: []ConnSpec{{Key: "$host", PerKey: 0}}}, "limit_conn[0].per_key: 0"},
		{Config{Conn: []ConnSpec{okConn, {Key: "$host", PerKey: -1}}}, "limit_conn[1].per_key: -1"},
		{Config{Conn: []ConnSpec{{Key: "$host", PerKey: 65536}}}, "limit_conn[0].per_key"},
		{Config{Conn: []ConnSpec{{Key: "$nope", PerKey: 1}}}, `limit_conn[0].key: key "$nope": unknown variable "$nope"`},
		{Config{Conn: []ConnSpec{{Key: "", PerKey: 1}}}, "limit_conn[0].key: empty key"},
		{Config{Conn: []ConnSpec{{Key: "$host", PerKey: 1, Status: 302}}}, "limit_conn[0].status: 302"},
		{Config{Conn: []ConnSpec{{Key: "$host", PerKey: 1, Status: 600}}}, "want 400 to 599"},
		{Config{Conn: []ConnSpec{{Key: "$host", PerKey: 1, Zone: "10x"}}}, `limit_conn[0].zone: "10x" is not a size`},
		{Config{Conn: []ConnSpec{{Key: "$host", PerKey: 1, Zone: "16k"}}}, `limit_conn[0].zone: "16k" is too small`},
		{Config{Req: []ReqSpec{okReq, {Key: "$host", Rate: "fast"}}}, `limit_req[1].rate: "fast" is not a rate`},
		{Config{Req: []ReqSpec{{Key: "$host", Rate: "0r/s"}}}, `limit_req[0].rate`},
		{Config{Req: []ReqSpec{{Key: "$host", Rate: "1r/s", Burst: -1}}}, "limit_req[0].burst: -1"},
		{Config{Req: []ReqSpec{{Key: "$host", Rate: "1r/s", Delay: -2}}}, "limit_req[0].delay: -2"},
		{Config{Req: []ReqSpec{{Key: "$host", Rate: "1r/s", Status: 399}}}, "limit_req[0].status: 399"},
		{Config{Req: []ReqSpec{{Key: "$x y", Rate: "1r/s"}}}, "limit_req[0].key"},
		{Config{Req: []ReqSpec{{Key: "$host", Rate: "1r/s", Zone: "1g"}}}, "limit_req[0].zone"},
	}
	for i, tt := range tests {
		_, err := NewPolicy(tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("case %d: NewPolicy error = %v, want one containing %q", i, err, tt.want)
		}
	}
}

func TestNewPolicyDefaults(t *testing.T) {
	p := mustPolicy(t, Config{
		Conn: []ConnSpec{{Key: "host", PerKey: 4}, {Key: "$binary_remote_addr", PerKey: 2, Status: 429, Zone: "1m"}},
		Req:  []ReqSpec{{Key: "binary_remote_addr", Rate: "30r/m", Burst: 5}},
	})
	c := p.Conn[0].Spec
	if c.Key != "$host" || c.Status != 503 || c.Zone != "10m" {
		t.Errorf("limit_conn[0] compiled to %+v, want key $host, status 503, zone 10m", c)
	}
	if c := p.Conn[1].Spec; c.Status != 429 || c.Zone != "1m" {
		t.Errorf("limit_conn[1] compiled to %+v, want status 429 zone 1m", c)
	}
	if r := p.Req[0]; r.Spec.Key != "$binary_remote_addr" || r.Spec.Status != 503 || r.Limiter.Rate() != 500 {
		t.Errorf("limit_req[0] compiled to %+v rate %d, want key $binary_remote_addr, status 503, rate 500", r.Spec, r.Limiter.Rate())
	}
	if got := p.Busiest(5); got == nil || len(got) != 0 {
		t.Errorf("Busiest with no requests = %#v, want empty", got)
	}
	if got := (&Policy{}).Busiest(5); got != nil {
		t.Errorf("Busiest without limit_conn = %v, want nil", got)
	}
}
