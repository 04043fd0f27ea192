//go:build unix

package limiterproxy

import "syscall"

// clientGone reports whether the peer of rc has closed or reset the
// connection: a peek at its receive queue finds the end of the stream or
// an error. Bytes waiting (a pipelined request) or none yet mean it is
// still there.
func clientGone(rc syscall.RawConn) bool {
	gone := false
	var b [1]byte
	err := rc.Control(func(fd uintptr) {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == nil:
			gone = n == 0
		case err == syscall.EAGAIN || err == syscall.EINTR:
		default:
			gone = true // ECONNRESET and the like
		}
	})
	return err == nil && gone
}
