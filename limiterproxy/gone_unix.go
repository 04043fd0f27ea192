//go:build unix

package limiterproxy

import (
	"sync"
	"syscall"
)

// clientGone reports whether the peer of rc has closed or reset the
// connection: a peek at its receive queue finds the end of the stream or
// an error. Bytes waiting (a pipelined request) or none yet mean it is
// still there. It allocates nothing: the Proxy asks it for every request.
func clientGone(rc syscall.RawConn) bool {
	p := goneProbes.Get().(*goneProbe)
	p.gone = false
	err := rc.Control(p.peek)
	gone := err == nil && p.gone
	goneProbes.Put(p)
	return gone
}

// goneProbe is one clientGone's peek, its callback bound once.
type goneProbe struct {
	b    [1]byte
	gone bool
	peek func(fd uintptr)
}

var goneProbes = sync.Pool{New: func() any {
	p := new(goneProbe)
	p.peek = p.peekFD
	return p
}}

func (p *goneProbe) peekFD(fd uintptr) {
	n, _, err := syscall.Recvfrom(int(fd), p.b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	switch {
	case err == nil:
		p.gone = n == 0
	case err == syscall.EAGAIN || err == syscall.EINTR:
	default:
		p.gone = true // ECONNRESET and the like
	}
}
