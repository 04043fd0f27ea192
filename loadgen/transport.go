package loadgen

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"stampede/internal/h1"
)

// isLoopbackV4 reports whether host is an IPv4 loopback address, the only
// kind of target a 127.x.y.z source address can reach.
func isLoopbackV4(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.To4() != nil && ip.IsLoopback()
}

// maxDials bounds each client's dials in progress (h1.Client.MaxDials).
// When the generator falls behind and a burst of overdue sends finds every
// connection busy, dialling one per send made connections by the thousand,
// which cost more CPU than the sends and put it further behind; past the
// bound a send takes the first connection that comes back. Its latency
// still counts from its intended time.
const maxDials = 64

// dialTimeout bounds each connect of the driver, the goroutines' (their
// net.Dialer's Timeout) and the event loops' alike, within a request's
// client timeout: a connect that runs out of it fails the request, as a
// client timeout when it has one (net's error says DeadlineExceeded). A
// variable for the tests.
var dialTimeout = 30 * time.Second

// transport returns a keep-alive HTTP/1.1 client (h1.Client) whose
// connections come from the source address addr ("" for the system's
// choice): over DriverOptions.Dial, or TCP to the target.
func (d *Driver) transport(addr string) (*h1.Client, error) {
	var from netip.Addr
	if addr != "" {
		host := addr
		if h, _, err := net.SplitHostPort(addr); err == nil {
			host = h
		}
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return nil, fmt.Errorf("client address %q is not an IP address (want e.g. 127.0.0.2)", addr)
		}
		from = ip
	}
	return &h1.Client{Dial: d.dialer(from), MaxIdle: d.flightBound(), MaxDials: maxDials, SharedContext: true}, nil
}

// dialer returns how the driver's connections from the address from
// (zero: the system's choice) are made: DriverOptions.Dial, or TCP to the
// target.
func (d *Driver) dialer(from netip.Addr) func(ctx context.Context) (net.Conn, error) {
	if dial := d.opts.Dial; dial != nil {
		return func(ctx context.Context) (net.Conn, error) { return dial(ctx, from) }
	}
	nd := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	if from.IsValid() {
		nd.LocalAddr = &net.TCPAddr{IP: from.AsSlice()}
		nd.Control = bindNoPort
	}
	addr := d.opts.Target.Host
	if d.opts.Target.Port() == "" {
		addr = net.JoinHostPort(d.opts.Target.Hostname(), "80")
	}
	return func(ctx context.Context) (net.Conn, error) { return nd.DialContext(ctx, "tcp", addr) }
}

// sourceAddr returns the IP address of a client address as transport
// takes it ("" or not an address: zero, the system's choice).
func sourceAddr(addr string) netip.Addr {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return ip
}
