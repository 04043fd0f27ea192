package main

import (
	"os"
)

func main() {
	ctx, stop := notifyContext(os.Stderr)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
