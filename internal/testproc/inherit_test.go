package testproc

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// inheritChildEnv makes the test binary TestInherit's child: a server that
// waits for a file named go in the directory the variable names, then
// answers every connection on its inherited descriptor with "hi".
const inheritChildEnv = "STAMPEDE_TESTPROC_INHERIT_CHILD"

func serveInherited(dir string) int {
	for {
		if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Before net.FileListener, which makes it non-blocking again.
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, InheritedFD, syscall.F_GETFL, 0)
	if errno != 0 || flags&syscall.O_NONBLOCK == 0 {
		fmt.Fprintf(os.Stderr, "descriptor %d is blocking (flags %#x, %v)\n", InheritedFD, flags, errno)
		return 1
	}
	ln, err := net.FileListener(os.NewFile(InheritedFD, "inherited"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return 0
		}
		io.WriteString(c, "hi")
		c.Close()
	}
}

// TestInherit hands a listener to a child and checks that the port is
// held from the start, that the child finds it non-blocking, that
// Accepting waits for the child to accept, not for the handshake, and
// that the child serves on it.
func TestInherit(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), inheritChildEnv+"="+dir)
	ln := Inherit(t, cmd)
	if _, err := net.Listen("tcp", ln.Addr); err == nil {
		t.Fatalf("listen on %s succeeded: the port is not held", ln.Addr)
	}
	p := ln.Start(t, cmd, syscall.SIGKILL, "the inheriting child")
	if ln.Accepting() {
		t.Fatal("Accepting before the child accepts: want false")
	}
	WriteFile(t, dir, "go", nil)
	if err := p.Wait(10*time.Second, ln.Accepting); err != nil {
		t.Fatalf("the child did not accept: %v\n%s", err, p.Log())
	}
	c, err := net.Dial("tcp", ln.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if b, err := io.ReadAll(c); string(b) != "hi" {
		t.Errorf("the child answered %q (%v), want hi", b, err)
	}
}
