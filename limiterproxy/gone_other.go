//go:build !unix

package limiterproxy

import "syscall"

// clientGone cannot ask the kernel on this system; the Handler then frees a
// gone client's slots when the server notices the disconnect.
func clientGone(syscall.RawConn) bool { return false }
