package testproc

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"stampede/internal/acceptq"
)

// Inherited is a loopback listener that a program the test starts takes
// over as its file descriptor 3, so that no other process can take the
// port between the test choosing it and the program listening: nginx
// through its NGINX environment variable (the way it hands its sockets to
// a new binary), gunicorn with --bind fd://3. The test keeps its own copy
// open until its end, only to watch the accept queue; it never accepts.
type Inherited struct {
	Addr string // 127.0.0.1:PORT
	ln   *net.TCPListener
}

// InheritedFD is the descriptor the program finds the listener at.
const InheritedFD = 3

// Inherit makes a listener on a free loopback port and hands it to cmd as
// its descriptor InheritedFD; the program is told to use it by the caller
// (an environment variable or a flag), and starts it with in.Start.
func Inherit(t testing.TB, cmd *exec.Cmd) *Inherited {
	t.Helper()
	ln := Listen(t).(*net.TCPListener)
	f, err := ln.File()
	if err != nil {
		t.Fatalf("a descriptor of the listener for %s: %v", cmd.Path, err)
	}
	// The child gets its own copy at exec; the parent's is not needed.
	t.Cleanup(func() { f.Close() })
	if len(cmd.ExtraFiles) > 0 {
		t.Fatalf("%s has extra files already; the listener must be descriptor %d", cmd.Path, InheritedFD)
	}
	cmd.ExtraFiles = []*os.File{f}
	return &Inherited{Addr: ln.Addr().String(), ln: ln}
}

// Accepting reports whether the program accepts connections: a connection
// opened now leaves the accept queue within a second. The handshake alone
// says nothing, for the kernel completes it on the listener before the
// program runs. The program sees a connection that sends nothing and
// closes, as from Dials.
func (in *Inherited) Accepting() bool {
	c, err := net.DialTimeout("tcp", in.Addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	queued := acceptq.Reader(in.ln)
	if queued == nil {
		return true // the OS does not say; the handshake is all there is
	}
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		n, ok := queued()
		if !ok {
			return true // the OS does not say; the handshake is all there is
		}
		if n == 0 {
			return true
		}
	}
	return false
}

// Start starts cmd as the package's Start does, then puts the listener
// back in non-blocking mode: os/exec made it blocking when it took its
// descriptor for cmd, and the mode belongs to the socket, not to one
// descriptor. A server whose processes share one listener, as nginx's
// workers do, would otherwise block in accept when another took the
// connection. No connection comes before the test opens one, so none is
// accepted in blocking mode.
func (in *Inherited) Start(t testing.TB, cmd *exec.Cmd, stop os.Signal, describe string) *Process {
	t.Helper()
	p := Start(t, cmd, stop, describe)
	rc, err := in.ln.SyscallConn()
	if err != nil {
		t.Fatalf("%v: %v", in, err)
	}
	var nerr error
	if err := rc.Control(func(fd uintptr) { nerr = syscall.SetNonblock(int(fd), true) }); err != nil || nerr != nil {
		t.Fatalf("%v: non-blocking mode: %v %v", in, err, nerr)
	}
	return p
}

// String describes in for failure messages.
func (in *Inherited) String() string {
	return fmt.Sprintf("the listener on %s (descriptor %d)", in.Addr, InheritedFD)
}
