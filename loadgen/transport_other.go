//go:build !linux

package loadgen

import "syscall"

// bindNoPort does nothing where IP_BIND_ADDRESS_NO_PORT is not known.
func bindNoPort(network, address string, c syscall.RawConn) error { return nil }
