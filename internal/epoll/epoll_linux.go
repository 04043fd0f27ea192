package epoll

import (
	"io"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Poller is an epoll instance and the buffer its waits fill. Fd is the
// instance, which its owner creates (epoll_create1) and closes; Events
// holds what the last wait returned. Add numbers the connections it
// registers, so that an event for an fd closed and given to a new
// connection in the same batch is told apart by its number (the event's
// Pad). The zero value has no instance. It is not safe for concurrent use:
// one loop owns it.
type Poller struct {
	Fd     int
	Events [128]unix.EpollEvent
	seq    uint32 // the last number Add gave
}

// Add registers fd for reading, writing and the peer's end (EPOLLRDHUP),
// edge-triggered, and returns the number its events carry in Pad. On
// failure fd is left open.
func (p *Poller) Add(fd int) (seq uint32, err error) {
	p.seq++
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(fd), Pad: int32(p.seq)}
	if err := unix.EpollCtl(p.Fd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return 0, err
	}
	return p.seq, nil
}

// WaitRaw is epoll_wait for up to ms milliseconds (-1: no bound, 0: only
// look) through RawSyscall, which the runtime does not see: no
// entersyscall, no P handed off by sysmon. A loop that waits so holds its
// P; the runtime asks it to yield with a signal, which ends the wait with
// EINTR.
func (p *Poller) WaitRaw(ms int) (int, error) {
	n, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(p.Fd), uintptr(unsafe.Pointer(&p.Events[0])),
		uintptr(len(p.Events)), uintptr(ms), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// Wait is epoll_wait for up to ms milliseconds (-1: no bound) as a system
// call the runtime sees, which lets another goroutine have the loop's P
// meanwhile.
func (p *Poller) Wait(ms int) (int, error) {
	return unix.EpollWait(p.Fd, p.Events[:], ms)
}

// Conn is a non-blocking socket registered with a Poller, and its buffers.
// As nginx does, it keeps a flag per direction that says whether the
// socket may have more to give (ReadReady) or room to take (WriteReady):
// an event sets it (Note), EAGAIN or a short read or write clears it, and
// Fill and Flush make no system call while it is clear. So a loop never
// makes a read or a write that can only return EAGAIN.
//
// The zero value has no socket; its reads and writes are through
// RawSyscall unless Syscall is set. It is not safe for concurrent use.
type Conn struct {
	Fd int
	// ReadReady: the socket may hold data or an EOF; WriteReady: it may
	// take more; EOF: the peer has closed or failed (EPOLLRDHUP, EPOLLHUP,
	// EPOLLERR), so a short read does not clear ReadReady.
	ReadReady, WriteReady, EOF bool
	// Syscall makes the reads and writes through Syscall, which the
	// runtime sees, rather than RawSyscall (see Poller.WaitRaw).
	Syscall bool

	In   []byte // what Fill read, up to its capacity
	Out  []byte // what Flush writes, from Sent
	Sent int
}

// Note records what an event, ev, said of c's socket.
func (c *Conn) Note(ev uint32) {
	if ev&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		c.EOF = true
	}
	if ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		c.ReadReady = true
	}
	if ev&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		c.WriteReady = true
	}
}

// Fill reads once into In's free room, which must not be empty, whether
// or not ReadReady is set. It returns 0 and no error when the socket has
// nothing now, io.EOF when the peer has closed.
func (c *Conn) Fill() (int, error) {
	room := c.In[len(c.In):cap(c.In)]
	for {
		n, err := c.sys(unix.SYS_READ, room)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			c.ReadReady = false
			return 0, nil
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		c.In = c.In[:len(c.In)+n]
		if n < len(room) && !c.EOF {
			// A stream socket gives all it holds: a short read emptied
			// it, and the next byte to come brings a new edge.
			c.ReadReady = false
		}
		return n, nil
	}
}

// Flush writes Out from Sent while WriteReady says the socket may take
// it, and reports whether all of it is written; then Out is emptied.
func (c *Conn) Flush() (bool, error) {
	for c.Sent < len(c.Out) {
		if !c.WriteReady {
			return false, nil
		}
		n, err := c.sys(unix.SYS_WRITE, c.Out[c.Sent:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			c.WriteReady = false
			return false, nil
		case err != nil:
			return false, err
		}
		c.Sent += n
		if c.Sent < len(c.Out) {
			c.WriteReady = false // short: the send buffer is full
		}
	}
	c.Out, c.Sent = c.Out[:0], 0
	return true, nil
}

// sys is read(2) or write(2) on c's socket, as Syscall says. It makes
// the system call itself rather than through Sys: one call fewer on the
// loops' path.
func (c *Conn) sys(trap uintptr, p []byte) (int, error) {
	var n uintptr
	var errno unix.Errno
	if c.Syscall {
		n, _, errno = unix.Syscall(trap, uintptr(c.Fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	} else {
		n, _, errno = unix.RawSyscall(trap, uintptr(c.Fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	}
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// Sys is read(2) or write(2) (trap) of p on fd through RawSyscall, for a
// socket that never blocks. p must not be empty.
func Sys(trap uintptr, fd int, p []byte) (int, error) {
	n, _, errno := unix.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
