package main

import (
	"os"

	"stampede/fakebackend"
)

// openAccessLog opens the backend's --access-log for appending and sets it
// in opts; done flushes and closes it.
func openAccessLog(path string, opts *fakebackend.Options) (done func(), err error) {
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, usagef("--access-log: %v", err)
	}
	opts.AccessLog = fakebackend.NewAccessLog(fh)
	return func() {
		opts.AccessLog.Flush()
		fh.Close()
	}, nil
}
