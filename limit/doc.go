// Package limit holds nginx's admission cores: limit_conn (ConnLimiter),
// limit_req (ReqLimiter), the Policy that runs them in nginx's order, the
// prefix locations that pick a request's limits, and the key, rate and zone
// size syntax they are configured with.
//
// Everything here takes its time as an argument and starts no goroutines,
// so the live proxy and the simulator drive the very same code, one in wall
// time and one in virtual time. The package never serves HTTP, exports
// metrics or reads configuration files: the proxy around it (package
// limiterproxy) and the scenario format do.
package limit
