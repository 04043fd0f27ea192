package limiterproxy

import "time"

// ProxyOptions configure NewProxy.
type ProxyOptions struct {
	// ReadTimeout is nginx's proxy_read_timeout: no response headers from
	// upstream within it answers 504. Zero means none.
	ReadTimeout time.Duration
	// ConnectTimeout is nginx's proxy_connect_timeout: a connection to
	// upstream not made within it (its SYNs dropped by a full backlog)
	// answers 504. Zero means DefaultConnectTimeout, nginx's default.
	ConnectTimeout time.Duration
	// SendTimeout is nginx's proxy_send_timeout: a write of the request
	// to the upstream that makes no progress within it answers 504. Zero
	// means none.
	SendTimeout time.Duration
	// UpstreamKeepAlive is nginx's `upstream { keepalive N; }` with
	// proxy_http_version 1.1 and an empty Connection header: at most N
	// idle upstream connections are kept for the next requests (see
	// NewProxy). Zero opens a connection per request, nginx's default.
	UpstreamKeepAlive int
	// NextUpstreamOff is nginx's proxy_next_upstream off: a reused
	// connection that fails before the response answers 502, as a fresh
	// one does. False sends the request once more, as nginx does by
	// default, unless it has a body or is a POST, LOCK or PATCH.
	NextUpstreamOff bool
	// Dial, when set, opens upstream connections (an in-memory network);
	// nil dials TCP within ConnectTimeout.
	Dial DialFunc
}

// NginxOptions configure WriteNginx.
type NginxOptions struct {
	Listen      string // e.g. "127.0.0.1:8080"
	Upstream    string // e.g. "127.0.0.1:9000"
	ReadTimeout time.Duration
	// ConnectTimeout is written as proxy_connect_timeout; zero writes
	// nothing, leaving nginx's default of 60 s.
	ConnectTimeout time.Duration
	// SendTimeout, ClientBodyTimeout and ClientHeaderTimeout are written
	// as proxy_send_timeout, client_body_timeout and client_header_timeout;
	// zero leaves nginx's default (60s).
	SendTimeout, ClientBodyTimeout, ClientHeaderTimeout time.Duration
	// TimeScale writes the config for a scenario played TimeScale times
	// real time: rates divided by it, timeouts multiplied. Zero means 1.
	TimeScale float64
	// NoHeaders leaves out the X-Stampede-Limit and X-Stampede-Dry-Run
	// headers (and their maps). False writes them.
	NoHeaders bool
	// UpstreamKeepAlive writes an upstream block with `keepalive N;` and
	// the proxy_http_version 1.1 and empty Connection header it needs;
	// zero writes proxy_pass to the address, nginx's connection per
	// request.
	UpstreamKeepAlive int
}
