// Command stampede replays overload incidents of multi-tenant web servers:
// a gunicorn-like fake backend, an nginx-like limiting proxy, and scenarios of
// many tenants played live or in virtual time.
//
// The package parses flags, builds the library's options, calls the
// library and maps its errors to exit statuses (0 ok, 1 error, 2 bad usage
// or scenario, 3 an SLO failed, 4 inconclusive, 130 interrupted). It holds
// no model of its own: every rule it applies lives in a library package.
package main
