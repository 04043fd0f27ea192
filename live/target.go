package live

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"stampede/workerpool"
)

// An external target in place of the built-in pair: checking its URL,
// that it answers, and polling its backend's stats.

// TargetError says Options.Target or BackendStatsURL is unusable: not an
// http URL, or outside loopback without AllowRemote. It is the caller's
// mistake, not the run's.
type TargetError struct{ Err error }

func (e *TargetError) Error() string { return e.Err.Error() }
func (e *TargetError) Unwrap() error { return e.Err }

// checkTarget parses raw, an http URL whose port, if given, is one a
// connection can go to, and refuses hosts outside loopback unless
// allowRemote.
func checkTarget(ctx context.Context, what, raw string, allowRemote bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("live: %s %q: want an http:// URL with a host (e.g. http://127.0.0.1:8080)", what, raw)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("live: %s %q: port %s is not a TCP port (1 to 65535)", what, raw, p)
		}
	}
	if allowRemote {
		return u, nil
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); ip != nil {
		if !ip.IsLoopback() {
			return nil, fmt.Errorf("live: %s %q is outside loopback (allow it with --allow-remote)", what, raw)
		}
		return u, nil
	}
	ips, err := net.DefaultResolver.LookupIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("live: %s %q: %w", what, raw, err)
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return nil, fmt.Errorf("live: %s %q resolves to %v, outside loopback (allow it with --allow-remote)", what, raw, ip)
		}
	}
	return u, nil
}

// reachTimeout bounds reachable's connection attempt.
const reachTimeout = 2 * time.Second

// reachable reports, before a run against target starts, that nothing
// accepts connections there, rather than letting every request of the run
// fail the same way.
func reachable(ctx context.Context, target *url.URL) error {
	addr := target.Host
	if target.Port() == "" {
		addr = net.JoinHostPort(target.Hostname(), "80")
	}
	d := net.Dialer{Timeout: reachTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		return c.Close()
	}
	if ctx.Err() != nil {
		// Interrupted before the run began: the driver returns at once and
		// the results say so, whatever the target.
		return nil
	}
	return fmt.Errorf("live: target %q: nothing accepts connections at %s (%w); start the proxy first", target.String(), addr, err)
}

// statsPoller keeps the latest backend stats fetched from a URL.
type statsPoller struct {
	url    *url.URL
	every  time.Duration
	client *http.Client
	last   atomic.Pointer[workerpool.Stats]
}

func newStatsPoller(u *url.URL, every time.Duration) *statsPoller {
	return &statsPoller{url: u, every: every, client: &http.Client{Timeout: 2 * time.Second}}
}

// latest returns the last stats fetched, false before the first.
func (p *statsPoller) latest() (workerpool.Stats, bool) {
	if s := p.last.Load(); s != nil {
		return *s, true
	}
	return workerpool.Stats{}, false
}

// run fetches the stats every p.every until ctx is done. A failed fetch
// keeps the previous stats: a sample is better late than invented.
func (p *statsPoller) run(ctx context.Context) {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		p.fetch(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *statsPoller) fetch(ctx context.Context) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url.String(), nil)
	if err != nil {
		return
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return
	}
	var s workerpool.Stats
	if json.NewDecoder(resp.Body).Decode(&s) == nil {
		p.last.Store(&s)
	}
}
