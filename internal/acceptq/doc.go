// Package acceptq reads the length of a listening socket's accept queue,
// the connections the kernel has completed and no one has accepted yet:
// the fake backend reports it as its backlog, tests watch it to see a
// program they started accept. It owns nothing else and never accepts.
package acceptq
