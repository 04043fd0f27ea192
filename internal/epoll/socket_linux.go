package epoll

import (
	"os"

	"golang.org/x/sys/unix"
)

// Listen returns a non-blocking listening TCP socket on sa, with
// SO_REUSEADDR and SO_REUSEPORT, so that each loop may listen on a socket
// of its own on the same port and the kernel spreads new connections over
// them. Its error is the failed system call's (an *os.SyscallError).
func Listen(sa unix.Sockaddr) (int, error) {
	fd, err := unix.Socket(family(sa), unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	fail := func(call string, err error) (int, error) {
		unix.Close(fd) //nolint:errcheck
		return -1, os.NewSyscallError(call, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return fail("setsockopt SO_REUSEADDR", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
		return fail("setsockopt SO_REUSEPORT", err)
	}
	if err := unix.Bind(fd, sa); err != nil {
		return fail("bind", err)
	}
	if err := unix.Listen(fd, 4096); err != nil {
		return fail("listen", err)
	}
	return fd, nil
}

// Dial starts a TCP connection to sa on a non-blocking socket with
// TCP_NODELAY and returns it; connecting says the connect is under way,
// to be ended by the socket's first EPOLLOUT and ConnectError. Its error
// is the failed system call's (an *os.SyscallError).
func Dial(sa unix.Sockaddr) (fd int, connecting bool, err error) {
	fd, err = unix.Socket(family(sa), unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, false, os.NewSyscallError("socket", err)
	}
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1) //nolint:errcheck
	err = unix.Connect(fd, sa)
	if err != nil && err != unix.EINPROGRESS {
		unix.Close(fd) //nolint:errcheck
		return -1, false, os.NewSyscallError("connect", err)
	}
	return fd, err != nil, nil
}

// ConnectError returns how the connect Dial left under way ended, once
// the socket is writable: nil when it is connected.
func (c *Conn) ConnectError() error {
	soerr, err := unix.GetsockoptInt(c.Fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err == nil && soerr != 0 {
		err = unix.Errno(soerr)
	}
	return err
}

func family(sa unix.Sockaddr) int {
	if _, ok := sa.(*unix.SockaddrInet6); ok {
		return unix.AF_INET6
	}
	return unix.AF_INET
}
