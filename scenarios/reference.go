package scenarios

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// RefKey is one key of the scenario format, for `stampede validate
// --reference`. Path names list elements with [] and free mapping keys
// (SLO groups) with <GROUP>.
type RefKey struct {
	Path    string
	Type    string
	Default string // "" when the key is required or has no default
	Example string
}

// Reference lists every key the scenario format reads, in file order.
// reference_test.go holds it against the decoder's key lists, so that a key
// added to one is added to the other.
var Reference = []RefKey{
	{"name", "string", "", "stock-balance"},
	{"description", "string", "", "one tenant opens reports in many tabs"},
	{"duration", "duration", "", "10m"},
	{"time_scale", "number in (0, 1] or auto (0.01 plays 100× faster)", "auto", "0.01"},
	{"seed", "integer", "1", "7"},
	{"backend.workers", "integer", "1", "8"},
	{"backend.backlog", "integer", "2048", "64"},
	{"backend.timeout", "duration", "none", "120s"},
	{"backend.on_client_abort", "continue|cancel", "continue", "continue"},
	{"backend.threads", "integer (gthread workers)", "1", "4"},
	{"backend.boot", "duration (a new worker's start)", "260ms", "300ms"},
	{"backend.max_requests", "integer, 0 for no recycling", "0", "5000"},
	{"backend.max_requests_jitter", "integer", "0", "500"},
	{"backend.backlog_overflow", "drop|reset", "drop", "reset"},
	{"backend.routes[].name", "string", "", "stock-balance"},
	{"backend.routes[].path", "path prefix", "", "/api/method/stock_balance"},
	{"backend.routes[].service", "distribution", "", "uniform:2m..4m"},
	{"proxy.read_timeout", "duration", "60s", "300s"},
	{"proxy.connect_timeout", "duration", "60s", "5s"},
	{"proxy.send_timeout", "duration", "60s", "30s"},
	{"proxy.client_body_timeout", "duration", "60s", "30s"},
	{"proxy.client_header_timeout", "duration", "60s", "30s"},
	{"proxy.upstream_keepalive", "integer 0-4096: idle upstream connections kept, 0 for none", "0", "32"},
	{"proxy.limit_conn.key", "nginx variable", "$host", "$binary_remote_addr"},
	{"proxy.limit_conn.per_key", "integer or off", "", "4"},
	{"proxy.limit_conn.zone", "size", "10m", "10m"},
	{"proxy.limit_conn.status", "HTTP status 400-599", "503", "429"},
	{"proxy.limit_conn.dry_run", "bool", "false", "true"},
	{"proxy.limit_req.key", "nginx variable", "$host", "$binary_remote_addr"},
	{"proxy.limit_req.rate", "rate (r/s, r/m)", "", "10r/s"},
	{"proxy.limit_req.burst", "integer", "0", "20"},
	{"proxy.limit_req.delay", "integer", "0", "8"},
	{"proxy.limit_req.nodelay", "bool", "false", "true"},
	{"proxy.limit_req.zone", "size", "10m", "10m"},
	{"proxy.limit_req.status", "HTTP status 400-599", "503", "429"},
	{"proxy.limit_req.dry_run", "bool", "false", "true"},
	{"proxy.locations[].path", "path prefix, or a list of them (longest prefix wins)", "", "/api/method/stock_balance"},
	{"proxy.locations[].limit_conn", "as proxy.limit_conn; none inherits the server's", "the server's", "{key: $host, per_key: 4}"},
	{"proxy.locations[].limit_req", "as proxy.limit_req; none inherits the server's", "the server's", "{key: $host, rate: 1r/s}"},
	{"tenants[].group", "string", "", "other-sites"},
	{"tenants[].count", "integer", "1", "249"},
	{"tenants[].host", "host template ({i}, {i:03})", "", "site{i}.example.com"},
	{"tenants[].hosts", "list of hosts, one per tenant (instead of host)", "", "[a.example.com, b.example.com]"},
	{"tenants[].addr", "loopback address template", "127.0.0.1", "127.0.1.{i}"},
	{"tenants[].addrs", "loopback CIDR template, one address per visitor", "none", "127.1.0.0/24"},
	{"tenants[].load.model", "open|closed|trace", "open", "closed"},
	{"tenants[].load.start", "duration", "0s", "1m"},
	{"tenants[].load.stop", "duration", "the end of the run", "9m"},
	{"tenants[].load.routes", "mapping of route to weight", "the backend's only route", "{page: 3, login: 1}"},
	{"tenants[].load.client_timeout", "duration", "none", "2m"},
	{"tenants[].load.arrivals", "poisson|constant (open)", "poisson", "constant"},
	{"tenants[].load.rate", "rate (/s, /m, /h or r/s, r/m) (open)", "", "0.2/s"},
	{"tenants[].load.stages[].duration", "duration (open)", "", "1m"},
	{"tenants[].load.stages[].rate", "rate (open)", "", "60/s"},
	{"tenants[].load.max_in_flight", "integer (open)", "100", "200"},
	{"tenants[].load.users", "integer (closed)", "", "8"},
	{"tenants[].load.think", "duration (closed)", "0s", "5s"},
	{"tenants[].load.iterations", "integer (closed), 0 for no end", "0", "1"},
	{"tenants[].load.on_timeout", "retry|give_up (closed)", "retry", "give_up"},
	{"slo.<GROUP>", "objective or list: METRIC OP VALUE", "", `["p99 < 1s", "ok_rate > 99%"]`},
	{"trace", "file of recorded arrivals (stampede import), relative to the scenario", "", "incident.trace"},
	{"sweep[].path", "--set path", "", "proxy.limit_conn.per_key"},
	{"sweep[].values", "list", "", "[off, 2, 4, 6, 8]"},
	{"recommend.protect", "tenant group", "every group with an SLO", "other-sites"},
	{"recommend.prefer", "margin|strictest|loosest", "margin", "strictest"},
}

// WriteReference writes Reference as an aligned table.
func WriteReference(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tTYPE\tDEFAULT\tEXAMPLE")
	for _, k := range Reference {
		def := k.Default
		if def == "" {
			def = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.Path, k.Type, def, k.Example)
	}
	return tw.Flush()
}
