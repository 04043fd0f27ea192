//go:build !linux

package acceptq

import "net"

// Reader returns nil: only Linux says how long a listen queue is.
func Reader(net.Listener) func() (int, bool) { return nil }
