//go:build unix

package limiterproxy

import "syscall"

// idleUsable reports whether an idle upstream connection may take a
// request: a peek at its receive queue finds nothing. The end of the
// stream, an error or bytes the upstream sent unasked mean it may not, as
// nginx's keepalive module closes an idle connection on any of them. A
// connection without a raw form (in memory) is taken as it is.
func idleUsable(c *upConn) bool {
	if c.raw == nil {
		return true
	}
	if c.peek == nil {
		c.peek = func(fd uintptr) {
			_, _, err := syscall.Recvfrom(int(fd), c.peekBuf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			c.usable = err == syscall.EAGAIN
		}
	}
	c.usable = false
	return c.raw.Control(c.peek) == nil && c.usable
}
