package loadgen

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// bindNoPort is a net.Dialer's Control for a dial from a given source
// address: IP_BIND_ADDRESS_NO_PORT defers the choice of the source port
// from bind to connect, where the kernel needs the port to be free only
// for this destination. Without it every bind searches the whole
// ephemeral range for a port no socket holds, which at thousands of
// connections took most of a run's CPU in the kernel.
func bindNoPort(network, address string, c syscall.RawConn) error {
	var err error
	if cerr := c.Control(func(fd uintptr) {
		err = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
	}); cerr != nil {
		return cerr
	}
	// An old kernel without the option still dials, the slow way.
	if err == unix.ENOPROTOOPT {
		return nil
	}
	return err
}
