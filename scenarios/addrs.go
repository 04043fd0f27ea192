package scenarios

import (
	"net/netip"

	"go.yaml.in/yaml/v3"
)

// MaxPoolAddrs bounds a tenant's address pool (addrs: at most a /22), so
// that the engines' per-address state stays small.
const MaxPoolAddrs = 1024

// VisitorAddr returns the client address of visitor v (from 0) of t. A
// tenant with an address pool (addrs: 127.1.0.0/24) gives its visitors the
// pool's addresses in turn, from its first, and starts again past the last:
// in a closed model a visitor is one user, who keeps its address for the
// whole run; in an open model every arrival is a new visitor, so arrival v
// comes from address v mod the pool's size. Without a pool every visitor
// comes from t.Addr. Both engines call it, so that they key limits by the
// same addresses.
func (t *Tenant) VisitorAddr(v int) string {
	if !t.Addrs.IsValid() {
		return t.Addr
	}
	return poolAddr(t.Addrs, v%t.PoolSize())
}

// PoolSize returns the number of addresses in t's pool, 1 without one.
func (t *Tenant) PoolSize() int {
	if !t.Addrs.IsValid() {
		return 1
	}
	return 1 << (32 - t.Addrs.Bits())
}

// poolAddr returns address k of prefix p (IPv4).
func poolAddr(p netip.Prefix, k int) string {
	b := p.Addr().As4()
	n := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	n += uint32(k)
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}).String()
}

// addrPool checks an addrs: template: each tenant's pool must be an IPv4
// loopback prefix of at most MaxPoolAddrs addresses.
func (d *decoder) addrPool(n *yaml.Node, path, src string, count int) {
	const example = "127.1.0.0/24, or 127.1.{i}.0/24 for a pool per tenant"
	t, ok := d.template(n, path, src)
	if !ok {
		return
	}
	for _, i := range []int{1, count} {
		s := t.expand(i)
		p, err := netip.ParsePrefix(s)
		switch {
		case err != nil:
			d.fail(n, path, nil, "tenant %d's pool %q is not an address prefix (want e.g. %s)", i, s, example)
		case !p.Addr().Is4() || !p.Addr().IsLoopback():
			d.fail(n, path, nil, "tenant %d's pool %q is not on IPv4 loopback, which is all a live run can send from (want e.g. %s)", i, s, example)
		case 1<<(32-p.Bits()) > MaxPoolAddrs:
			d.fail(n, path, nil, "tenant %d's pool %q holds %d addresses; at most %d (a /22) (want e.g. %s)", i, s, 1<<(32-p.Bits()), MaxPoolAddrs, example)
		default:
			continue
		}
		return
	}
}

func (d *decoder) addrTemplate(n *yaml.Node, path, src string, count int) {
	t, ok := d.template(n, path, src)
	if !ok {
		return
	}
	for i := 1; i <= count; i++ {
		a := t.expand(i)
		if why := badAddr(a); why != "" {
			d.fail(n, path, nil, "tenant %d's address %q %s (want e.g. 127.0.0.9, or 127.0.1.{i})", i, a, why)
			return
		}
		if !t.numbered() {
			return
		}
	}
}

// badAddr says why a is not a loopback client address, or "". Live runs
// bind their client sockets to it, so it must stay on loopback.
func badAddr(a string) string {
	ip, err := netip.ParseAddr(a)
	switch {
	case err != nil:
		return "is not an IP address"
	case ip.Zone() != "":
		return "has a zone"
	case ip.Is4() && ip.As4()[0] == 127:
		return ""
	case ip == netip.IPv6Loopback():
		return ""
	}
	return "is not on loopback (127.0.0.0/8 or ::1)"
}
