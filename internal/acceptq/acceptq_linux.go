package acceptq

import (
	"net"
	"syscall"
	"unsafe"
)

// Reader returns a function that reads how many connections wait in ln's
// accept queue, as Linux reports it for a listening socket (tcp_info's
// unacked field), or nil for a listener that is not TCP.
func Reader(ln net.Listener) func() (int, bool) {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return nil
	}
	rc, err := tl.SyscallConn()
	if err != nil {
		return nil
	}
	return func() (int, bool) {
		var info syscall.TCPInfo
		size := uint32(unsafe.Sizeof(info))
		var errno syscall.Errno
		err := rc.Control(func(fd uintptr) {
			_, _, errno = syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_INFO,
				uintptr(unsafe.Pointer(&info)), uintptr(unsafe.Pointer(&size)), 0)
		})
		if err != nil || errno != 0 {
			return 0, false
		}
		return int(info.Unacked), true
	}
}
