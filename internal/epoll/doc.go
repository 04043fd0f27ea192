// Package epoll holds what an event loop in nginx's shape does with its
// sockets on Linux, for the loops that leave Go's netpoller: an epoll
// instance whose connections are registered once, edge-triggered, for
// both directions (Poller), and a non-blocking connection that keeps a
// flag per direction saying whether the socket may have more to give or
// room to take, read and written only while it says so (Conn).
//
// stampede proxy --server epoll (limiterproxy.EpollServer) and the floor
// it is measured against (bench/floorproxy) are built on it, so that the
// product and its floor make the same system calls for the same events.
// It owns no loop, no thread and no protocol: what a loop does with the
// bytes is its own.
package epoll
