//go:build unix

package h1

import (
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
)

// pollReader reads a connection of the runtime's poller through its
// syscall.RawConn so that a read with no request outstanding waits for
// the poller at once. A plain Read tries the system call first and, on a
// keep-alive connection idle until its next request, fails with EAGAIN
// before it parks: one wasted system call per request. Waiting without
// trying is safe because RawConn.Read resets the poller's readiness
// before it calls back: a request written after the callback saw none
// outstanding is answered after the reset, so the answer's readiness
// wakes the wait. What the server does unasked in the microseconds
// between the read that ended an answer and the reset (a close not
// announced by Connection: close) is seen only when the next request
// makes the connection readable again: its write draws the reset of a
// closed connection, and the request fails before any byte of an
// answer, as one does on a connection the server closed while it idled.
// A close that comes later, as keep-alive timeouts do, wakes the wait.
// Only one goroutine reads.
type pollReader struct {
	rc    syscall.RawConn
	asked *atomic.Bool
	read  func(fd uintptr) bool // r.readOnce, bound once

	// The read under way.
	b     []byte
	n     int
	err   error
	first bool
}

// newPollReader returns a pollReader over nc, or nil when nc is not a
// connection of the runtime's poller.
func newPollReader(nc net.Conn, asked *atomic.Bool) *pollReader {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	r := &pollReader{rc: rc, asked: asked}
	r.read = r.readOnce
	return r
}

func (r *pollReader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	r.b, r.n, r.err, r.first = b, 0, nil, true
	err := r.rc.Read(r.read)
	r.b = nil
	if err != nil {
		return 0, err
	}
	return r.n, r.err
}

// readOnce is RawConn.Read's callback: it reports true when the read is
// done, false to wait for the poller.
func (r *pollReader) readOnce(fd uintptr) bool {
	if r.first {
		r.first = false
		if !r.asked.Load() {
			return false
		}
	}
	for {
		n, err := syscall.Read(int(fd), r.b)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return false
		case err != nil:
			r.err = os.NewSyscallError("read", err)
		case n == 0:
			r.err = io.EOF
		default:
			r.n = n
		}
		return true
	}
}
