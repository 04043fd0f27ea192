package limit

import (
	"net/netip"
	"strings"
	"testing"
)

// TestKeysEval: every rule's value in order, limit_req's first; a value
// longer than nginx counts comes back empty; the strings outlive the next
// Eval.
func TestKeysEval(t *testing.T) {
	p := mustPolicy(t, Config{
		Req:  []ReqSpec{{Key: "$http_x_tenant", Rate: "1r/s"}},
		Conn: []ConnSpec{{Key: "$host", PerKey: 1}, {Key: "$remote_addr", PerKey: 1}, {Key: "$http_x_tenant", PerKey: 1}},
	})
	var k Keys
	in := Request{Host: "Site1:80", Addr: netip.MustParseAddr("10.0.0.7"), Header: map[string][]string{"X-Tenant": {"acme"}}}
	req, conn := k.Eval(p, &in)
	if len(req) != 1 || req[0] != "acme" || len(conn) != 3 || conn[0] != "site1" || conn[1] != "10.0.0.7" || conn[2] != "acme" {
		t.Fatalf("Eval = %q, %q; want [acme], [site1 10.0.0.7 acme]", req, conn)
	}
	kept := conn[0]
	long := strings.Repeat("t", MaxConnKey+1)
	in = Request{Host: "site2", Header: map[string][]string{"X-Tenant": {long}}}
	req, conn = k.Eval(p, &in)
	if req[0] != long || conn[0] != "site2" || conn[1] != "" || conn[2] != "" {
		t.Errorf("step 2: Eval = %.20q, %.20q; want the long tenant for limit_req, none for limit_conn", req, conn)
	}
	if kept != "site1" {
		t.Errorf("a key of the first Eval became %q after the second", kept)
	}
	r2, c2 := p.Keys(&in)
	if r2[0] != req[0] || c2[0] != conn[0] {
		t.Errorf("Policy.Keys = %.20q, %.20q; want Eval's", r2, c2)
	}
}

// TestKeysEvalAllocs: a reused Keys allocates the one string the keys
// share, nothing else.
func TestKeysEvalAllocs(t *testing.T) {
	p := mustPolicy(t, Config{
		Req:  []ReqSpec{{Key: "$binary_remote_addr", Rate: "10r/s"}},
		Conn: []ConnSpec{{Key: "$host", PerKey: 4}, {Key: "$http_x_tenant", PerKey: 4}},
	})
	in := Request{Host: "site1.example.com", Addr: netip.MustParseAddr("10.0.0.7"), Header: map[string][]string{"X-Tenant": {"acme"}}}
	var k Keys
	if n := testing.AllocsPerRun(1000, func() { k.Eval(p, &in) }); n != 1 {
		t.Errorf("Eval: %v allocations, want 1", n)
	}
}

func BenchmarkKeysEval(b *testing.B) {
	p := mustPolicy(b, Config{
		Req:  []ReqSpec{{Key: "$binary_remote_addr", Rate: "10r/s"}},
		Conn: []ConnSpec{{Key: "$host", PerKey: 4}},
	})
	in := Request{Host: "Site1.Example.com:443", Addr: netip.MustParseAddr("10.0.0.7")}
	var k Keys
	b.ReportAllocs()
	for b.Loop() {
		k.Eval(p, &in)
	}
}
