// Command stampede replays overload incidents of multi-tenant web servers:
// a gunicorn-like fake backend, an nginx-like limiting proxy, and scenarios of
// many tenants played live or in virtual time.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
