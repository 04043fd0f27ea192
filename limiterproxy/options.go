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
	// KeepAlive reuses upstream connections, as nginx's upstream keepalive
	// does. False opens a connection per request, nginx's default. Either
	// way a request is never silently sent twice: a reused connection the
	// upstream drops answers 502, as a fresh one does.
	KeepAlive bool
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
}
