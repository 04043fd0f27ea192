// Package limiterproxy is the nginx-like proxy around package limit's
// admission cores: the http.Handler that applies a limit.Policy to each
// request (limit_req's delay waited on the request's context, limit_conn's
// slots held until the response ends, freed early when the client hangs
// up), the reverse proxy to the upstream with nginx's timeouts and answers,
// the server that guards what nginx refuses before any module runs, the
// Prometheus metrics and busiest keys, the --limit-conn and --limit-req
// flag syntax, and the export of a Config as an nginx.conf.
//
// It adapts each *http.Request to the small limit.Request the keys are
// evaluated from; every admission decision is limit's, the same code the
// simulator runs. The package never prints, exits or reads the command
// line: cmd/stampede wires it.
package limiterproxy
