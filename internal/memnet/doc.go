// Package memnet is an in-memory network for HTTP servers and clients in
// one process: a net.Listener whose connections are in-memory pipes,
// carrying the same HTTP/1.1 bytes through the same net/http servers as
// loopback TCP, without the kernel's system calls.
//
// A Listener models a listening socket's accept queue: a bounded queue of
// connections that are established (Dial has returned) but not yet
// accepted. When the queue is full a dial is either refused at once (Linux
// with tcp_abort_on_overflow=1 resets the connection) or, as Linux does by
// default, its SYN is dropped and retransmitted on a schedule the caller
// supplies, until the dial's context ends.
//
// Connections are built on channels, so a goroutine blocked on one is
// durably blocked in the sense of testing/synctest: code served over
// memnet can run under a fake clock, which loopback sockets cannot.
//
// It never touches the kernel's network: an address is a label, a dial
// reaches only a Listener of the same process.
package memnet
