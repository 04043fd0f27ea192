//go:build !unix

package h1

import (
	"io"
	"net"
	"sync/atomic"
)

// newPollReader returns nil: without unix's system calls a Line reads
// through the connection's own Read.
func newPollReader(net.Conn, *atomic.Bool) io.Reader { return nil }
