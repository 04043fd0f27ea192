package main

import (
	"math"

	"github.com/spf13/cobra"

	"stampede/limiterproxy"
)

func newNginxConfigCmd() *cobra.Command {
	var (
		listen, upstream string
		timeScale        float64
		sets             scenarioSets
		snippet, headers bool
	)
	c := &cobra.Command{
		Use:   "nginx-config SCENARIO [--listen ADDR] [--upstream ADDR] [--time-scale F] [--snippet] [--headers=false]",
		Short: "Print the nginx configuration equivalent to a scenario's proxy",
		Long: `nginx-config prints a complete nginx.conf with the scenario's limit_conn and
limit_req limits and read timeout, proxying to --upstream. Run it with
nginx -p DIR -c nginx.conf -e stderr. With proxy.upstream_keepalive N it
writes an upstream block with keepalive N, proxy_http_version 1.1 and an
empty Connection header.

--time-scale writes it for a live run played F times real time: rates divided
by F and timeouts multiplied (use the scenario's time_scale, e.g. 0.01, to put
nginx in front of 'stampede backend --time-scale 0.01'). The default, 1, is
the configuration to deploy.

--snippet prints only what to paste into an nginx.conf of your own: the
http {} part (limit_req_zone, limit_conn_zone, map) and the server {} part
(the server's limit lines and one location per proxy.locations path), each
labelled. An add_header in a location stops it inheriting the server's
add_header lines (HSTS and the like); --headers=false leaves the
X-Stampede-* headers out for production.`,
		Example: `  stampede nginx-config scenarios/stock-balance.yaml > nginx.conf
  stampede nginx-config scenarios/stock-balance.yaml --upstream 127.0.0.1:8000 --set proxy.limit_conn.per_key=2
  stampede nginx-config scenarios/stock-balance.yaml --snippet --headers=false
  stampede nginx-config scenarios/stock-balance.yaml --set proxy.upstream_keepalive=32`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if timeScale <= 0 || math.IsInf(timeScale, 0) || math.IsNaN(timeScale) {
				return usagef("--time-scale %v: want a number > 0 (e.g. 0.01 for 100× faster, 1 for real time)", timeScale)
			}
			sc, err := sets.load(args[0])
			if err != nil {
				return err
			}
			write := limiterproxy.WriteNginx
			if snippet {
				write = limiterproxy.WriteNginxSnippet
			}
			err = write(c.OutOrStdout(), sc.Proxy.Limits, limiterproxy.NginxOptions{
				Listen:         listen,
				Upstream:       upstream,
				ReadTimeout:    sc.Proxy.ReadTimeout,
				TimeScale:      timeScale,
				ConnectTimeout: sc.Proxy.ConnectTimeout,
				NoHeaders:      !headers,
				SendTimeout:    sc.Proxy.SendTimeout, ClientBodyTimeout: sc.Proxy.ClientBodyTimeout,
				ClientHeaderTimeout: sc.Proxy.ClientHeaderTimeout,
				UpstreamKeepAlive:   sc.Proxy.UpstreamKeepAlive,
			})
			return asUsage(err)
		},
	}
	fl := c.Flags()
	fl.StringVar(&listen, "listen", limiterproxy.DefaultNginxListen, "address nginx listens on")
	fl.StringVar(&upstream, "upstream", limiterproxy.DefaultNginxUpstream, "HOST:PORT of the app nginx proxies to")
	fl.Float64Var(&timeScale, "time-scale", 1, "write rates and timeouts for a run played this many times real time")
	sets.register(c, "")
	fl.BoolVar(&snippet, "snippet", false, "print the http {} part and the server {} part to paste into an nginx.conf of your own, each labelled")
	fl.BoolVar(&headers, "headers", true, "write the X-Stampede-Limit and X-Stampede-Dry-Run headers (--headers=false for production)")
	return c
}
