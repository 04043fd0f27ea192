//go:build !linux

package fakebackend

import "net"

// acceptQueue returns nil: only Linux says how long a listen queue is.
func acceptQueue(net.Listener) func() (int, bool) { return nil }
