package scenarios

import (
	"go.yaml.in/yaml/v3"

	"stampede/limit"
)

// upstreamKeepAlive reads proxy.upstream_keepalive, nginx's
// `upstream { keepalive N; }`: from 0, nginx's default of a connection per
// request, to limit.MaxUpstreamKeepAlive.
func (f *fields) upstreamKeepAlive(p *Proxy) {
	f.integer("upstream_keepalive", "32", 0, limit.MaxUpstreamKeepAlive, &p.UpstreamKeepAlive)
}

// keepAliveNode writes proxy.upstream_keepalive, saying what 0 means.
func keepAliveNode(n int) *yaml.Node {
	v := intNode(n)
	if n == 0 {
		v.LineComment = "# off: a connection per request"
	}
	return v
}
