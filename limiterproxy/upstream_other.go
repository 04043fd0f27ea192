//go:build !unix

package limiterproxy

// idleUsable cannot ask the kernel on this system: an idle upstream
// connection is taken as it is, and one the upstream closed fails its
// request as nginx's would in the same race.
func idleUsable(*upConn) bool { return true }
