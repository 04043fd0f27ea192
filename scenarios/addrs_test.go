package scenarios

import (
	"strings"
	"testing"
)

func TestAddressPoolFile(t *testing.T) {
	const base = `name: p
duration: 10s
backend: {workers: 2, routes: [{name: page, path: /, service: 10ms}]}
tenants:
  - group: sites
    count: 3
    host: "site{i}.example.com"
    load: {rate: 1/s}
`
	sc, err := Parse("p.yaml", []byte(base+"    addrs: 127.1.{i}.0/30\n"))
	if err != nil {
		t.Fatal(err)
	}
	ts := sc.Expand()
	for i, c := range []struct {
		tenant, visitor int
		want            string
	}{
		{0, 0, "127.1.1.0"}, {0, 3, "127.1.1.3"}, {0, 4, "127.1.1.0"}, {2, 5, "127.1.3.1"},
	} {
		if got := ts[c.tenant].VisitorAddr(c.visitor); got != c.want {
			t.Errorf("step %d: tenant %d visitor %d: %s, want %s", i, c.tenant, c.visitor, got, c.want)
		}
	}
	if n := ts[0].PoolSize(); n != 4 {
		t.Errorf("a /30 pool has %d addresses, want 4", n)
	}
	plain, err := Parse("p.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if tt := plain.Expand()[1]; tt.VisitorAddr(7) != "127.0.0.1" || tt.PoolSize() != 1 {
		t.Errorf("without a pool, visitor 7 comes from %s (pool %d), want 127.0.0.1 (1)", tt.VisitorAddr(7), tt.PoolSize())
	}
	for _, c := range []struct{ addrs, want string }{
		{"10.0.0.0/24", "not on IPv4 loopback"},
		{"127.1.0.0/16", "at most 1024"},
		{"127.1.0.0", "not an address prefix"},
	} {
		_, err := Parse("p.yaml", []byte(base+"    addrs: "+c.addrs+"\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "tenants[0].addrs") {
			t.Errorf("addrs %s: error %v, want one at tenants[0].addrs saying %q", c.addrs, err, c.want)
		}
	}
}
