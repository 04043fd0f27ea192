package epoll

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"golang.org/x/sys/unix"
)

// pair returns the two ends of a non-blocking stream socket pair, closed
// when the test ends (an end closed before is closed again harmlessly:
// its fd is -1 then).
func pair(t *testing.T) (a, b *int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socketpair: %v", err)
	}
	a, b = &fds[0], &fds[1]
	t.Cleanup(func() {
		for _, fd := range []*int{a, b} {
			if *fd >= 0 {
				unix.Close(*fd) //nolint:errcheck
			}
		}
	})
	return a, b
}

func write(t *testing.T, fd int, s string) {
	t.Helper()
	if n, err := unix.Write(fd, []byte(s)); n != len(s) || err != nil {
		t.Fatalf("write %q: %d, %v", s, n, err)
	}
}

func TestNote(t *testing.T) {
	tests := []struct {
		name               string
		ev                 uint32
		read, write, ended bool
	}{
		{"EPOLLIN", unix.EPOLLIN, true, false, false},
		{"EPOLLOUT", unix.EPOLLOUT, false, true, false},
		{"EPOLLRDHUP", unix.EPOLLRDHUP, true, false, true},
		{"EPOLLHUP", unix.EPOLLHUP, true, true, true},
		{"EPOLLERR", unix.EPOLLERR, true, true, true},
		{"EPOLLIN|EPOLLOUT", unix.EPOLLIN | unix.EPOLLOUT, true, true, false},
	}
	for _, tt := range tests {
		var c Conn
		c.Note(tt.ev)
		if c.ReadReady != tt.read || c.WriteReady != tt.write || c.EOF != tt.ended {
			t.Errorf("Note(%s): ReadReady %v, WriteReady %v, EOF %v; want %v, %v, %v",
				tt.name, c.ReadReady, c.WriteReady, c.EOF, tt.read, tt.write, tt.ended)
		}
	}
}

func TestFill(t *testing.T) {
	for _, syscall := range []bool{false, true} {
		a, b := pair(t)
		c := Conn{Fd: *a, Syscall: syscall, In: make([]byte, 0, 8)}
		step := func(i int, wantN int, wantErr error, wantIn string, wantReady bool) {
			t.Helper()
			n, err := c.Fill()
			if n != wantN || !errors.Is(err, wantErr) || string(c.In) != wantIn || c.ReadReady != wantReady {
				t.Errorf("Syscall %v, step %d: Fill() = %d, %v; In %q, ReadReady %v; want %d, %v; %q, %v",
					syscall, i, n, err, c.In, c.ReadReady, wantN, wantErr, wantIn, wantReady)
			}
		}
		c.ReadReady = true
		step(1, 0, nil, "", false) // nothing there: EAGAIN clears ReadReady
		write(t, *b, "abc")
		c.ReadReady = true
		step(2, 3, nil, "abc", false) // short: the socket is empty
		write(t, *b, "defghijk")
		c.ReadReady = true
		step(3, 5, nil, "abcdefgh", true) // filled the room: more may be there
		c.In = c.In[:0]
		unix.Close(*b) //nolint:errcheck
		*b = -1
		c.Note(unix.EPOLLIN | unix.EPOLLRDHUP)
		step(4, 3, nil, "ijk", true) // short, but after the peer's end: the EOF is still to read
		step(5, 0, io.EOF, "ijk", true)
	}
}

func TestFlush(t *testing.T) {
	for _, syscall := range []bool{false, true} {
		a, b := pair(t)
		unix.SetsockoptInt(*a, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096) //nolint:errcheck
		want := bytes.Repeat([]byte("0123456789abcdef"), 64<<10)      // 1 MiB: more than the buffers hold
		c := Conn{Fd: *a, Syscall: syscall, Out: want}
		done, err := c.Flush()
		if done || err != nil || c.WriteReady {
			t.Fatalf("Syscall %v, step 1: Flush() with WriteReady false = %v, %v; WriteReady %v; want false, nil, false", syscall, done, err, c.WriteReady)
		}
		if c.Sent != 0 {
			t.Fatalf("Syscall %v, step 1: Sent %d without WriteReady, want 0", syscall, c.Sent)
		}
		var got []byte
		buf := make([]byte, 64<<10)
		for i := 2; !done; i++ {
			if i > 100000 {
				t.Fatalf("Syscall %v: not flushed after %d steps, %d of %d bytes sent", syscall, i, c.Sent, len(want))
			}
			c.WriteReady = true
			done, err = c.Flush()
			if err != nil {
				t.Fatalf("Syscall %v, step %d: Flush() = %v", syscall, i, err)
			}
			if !done && c.WriteReady {
				t.Fatalf("Syscall %v, step %d: Flush() = false with WriteReady still set, want it cleared (EAGAIN or a short write)", syscall, i)
			}
			for {
				n, err := unix.Read(*b, buf)
				if err == unix.EAGAIN {
					break
				}
				if err != nil || n == 0 {
					t.Fatalf("Syscall %v, step %d: reading the other end: %d, %v", syscall, i, n, err)
				}
				got = append(got, buf[:n]...)
			}
		}
		if len(c.Out) != 0 || c.Sent != 0 {
			t.Errorf("Syscall %v: after the flush Out has %d bytes, Sent %d; want 0, 0", syscall, len(c.Out), c.Sent)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("Syscall %v: the other end read %d bytes, not the %d written in order", syscall, len(got), len(want))
		}
	}
}

func TestPoller(t *testing.T) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatalf("epoll_create1: %v", err)
	}
	defer unix.Close(ep) //nolint:errcheck
	p := Poller{Fd: ep}
	a, _ := pair(t)
	c, d := pair(t)
	seqs := map[int32]uint32{}
	for i, fd := range []int{*a, *c} {
		seq, err := p.Add(fd)
		if err != nil || seq != uint32(i+1) {
			t.Fatalf("Add(fd %d) = %d, %v; want %d, nil", fd, seq, err, i+1)
		}
		seqs[int32(fd)] = seq
	}
	for _, wait := range []struct {
		name string
		fn   func(int) (int, error)
	}{{"WaitRaw", p.WaitRaw}, {"Wait", p.Wait}} {
		// Both sockets were writable when added: one edge each, once.
		if wait.name == "WaitRaw" {
			n, err := wait.fn(0)
			if n != 2 || err != nil {
				t.Fatalf("%s(0) after Add = %d, %v; want 2 events", wait.name, n, err)
			}
			for _, ev := range p.Events[:n] {
				if ev.Events&unix.EPOLLOUT == 0 || uint32(ev.Pad) != seqs[ev.Fd] {
					t.Errorf("%s: event %#x for fd %d with Pad %d; want EPOLLOUT with Pad %d", wait.name, ev.Events, ev.Fd, ev.Pad, seqs[ev.Fd])
				}
			}
		}
		if n, err := wait.fn(0); n != 0 || err != nil {
			t.Fatalf("%s(0) with no new edge = %d, %v; want 0, nil", wait.name, n, err)
		}
		write(t, *d, "x")
		n, err := wait.fn(0)
		if n != 1 || err != nil {
			t.Fatalf("%s(0) after a write = %d, %v; want 1 event", wait.name, n, err)
		}
		if ev := p.Events[0]; ev.Fd != int32(*c) || ev.Events&unix.EPOLLIN == 0 || uint32(ev.Pad) != seqs[ev.Fd] {
			t.Errorf("%s: event %#x for fd %d with Pad %d; want EPOLLIN for fd %d with Pad %d", wait.name, ev.Events, ev.Fd, ev.Pad, *c, seqs[int32(*c)])
		}
	}
}

// connect dials sa and waits on p until the connect has ended; it
// returns the connection's fd (-1 if Dial failed, closed when the test
// ends) and how the connect ended.
func connect(t *testing.T, p *Poller, sa unix.Sockaddr) (int, error) {
	t.Helper()
	fd, connecting, err := Dial(sa)
	if err != nil {
		return -1, err
	}
	t.Cleanup(func() { unix.Close(fd) }) //nolint:errcheck
	if _, err := p.Add(fd); err != nil {
		t.Fatalf("Add: %v", err)
	}
	c := Conn{Fd: fd, WriteReady: !connecting}
	for !c.WriteReady {
		n, err := p.Wait(-1)
		if err != nil && err != unix.EINTR {
			t.Fatalf("Wait: %v", err)
		}
		for _, ev := range p.Events[:n] {
			if ev.Fd == int32(fd) {
				c.Note(ev.Events)
			}
		}
	}
	return fd, c.ConnectError()
}

func TestListenDial(t *testing.T) {
	ln, err := Listen(&unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
	if err != nil {
		t.Fatalf("Listen(127.0.0.1:0): %v", err)
	}
	sa, err := unix.Getsockname(ln)
	if err != nil {
		unix.Close(ln) //nolint:errcheck
		t.Fatalf("getsockname: %v", err)
	}
	// SO_REUSEPORT: a second loop's socket on the same port.
	if ln2, err := Listen(sa); err != nil {
		t.Errorf("Listen(%v) beside the first: %v", sa, err)
	} else {
		unix.Close(ln2) //nolint:errcheck
	}

	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		unix.Close(ln) //nolint:errcheck
		t.Fatalf("epoll_create1: %v", err)
	}
	defer unix.Close(ep) //nolint:errcheck
	p := Poller{Fd: ep}
	if _, err := connect(t, &p, sa); err != nil {
		t.Errorf("connect to a listener: %v, want nil", err)
	}
	if nd, _, err := unix.Accept4(ln, unix.SOCK_CLOEXEC); err != nil {
		t.Errorf("accept after the connect: %v", err)
	} else {
		unix.Close(nd) //nolint:errcheck
	}

	// No one listening: refused, by Dial at once or once the socket is
	// writable.
	unix.Close(ln) //nolint:errcheck
	if _, err := connect(t, &p, sa); !errors.Is(err, unix.ECONNREFUSED) {
		t.Errorf("connect to a closed port: %v, want ECONNREFUSED", err)
	}
}
