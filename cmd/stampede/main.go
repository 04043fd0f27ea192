package main

import (
	"os"
	"runtime/debug"
)

func main() {
	if os.Getenv("GOGC") == "" {
		// A live run's heap is small and churns thousands of requests a
		// second; collecting it less often gives that CPU to the run.
		debug.SetGCPercent(400)
	}
	ctx, stop := notifyContext(os.Stderr)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
