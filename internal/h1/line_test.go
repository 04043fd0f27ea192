package h1

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// lineServer serves raw HTTP/1.1 on loopback TCP, so that a Line reads
// through the runtime's poller as it does against a real target: each
// request is answered by its path, /ok with 200, /hold never (until the
// client closes), /bye with 200 and then the connection's close. Every
// connection accepted goes to conns.
func lineServer(t *testing.T) (addr string, conns <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan net.Conn, 16)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			ch <- nc
			go func() {
				defer nc.Close()
				br := bufio.NewReader(nc)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					switch req.URL.Path {
					case "/hold":
						io.Copy(io.Discard, br)
						return
					case "/bye":
						io.WriteString(nc, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nbye")
						return
					}
					fmt.Fprintf(nc, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(req.Host), req.Host)
				}
			}()
		}
	}()
	return ln.Addr().String(), ch
}

func dialLine(t *testing.T, addr string) *Line {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLine(nc)
	t.Cleanup(func() { l.Close() })
	if newPollReader(nc, &l.asked) == nil {
		t.Fatal("a TCP connection's Line does not read through the poller")
	}
	return l
}

// TestLineWaitBeforeAndAfterSend sends requests on one Line over TCP with
// the reading goroutine's Wait begun before the Send (parked on the
// poller with no request outstanding, which must still wake for the
// answer) and after it (the answer perhaps already there), and checks
// every answer whole.
func TestLineWaitBeforeAndAfterSend(t *testing.T) {
	addr, _ := lineServer(t)
	l := dialLine(t, addr)
	for i := range 200 {
		host := fmt.Sprintf("h%d.example", i)
		waited := make(chan error, 1)
		if i%2 == 0 {
			go func() { waited <- l.Wait() }()
			// Let the Wait park before the request goes, most times.
			time.Sleep(100 * time.Microsecond)
		}
		if err := l.Send(time.Time{}, "/ok", host); err != nil {
			t.Fatalf("request %d: Send: %v", i, err)
		}
		if i%2 != 0 {
			go func() { waited <- l.Wait() }()
		}
		if err := <-waited; err != nil {
			t.Fatalf("request %d: Wait: %v", i, err)
		}
		status, keep, err := l.Answer(nil)
		if err != nil || status != 200 || !keep {
			t.Fatalf("request %d: Answer = %d, %v, %v; want 200, true, nil", i, status, keep, err)
		}
		if n := l.br.Buffered(); n != 0 {
			t.Fatalf("request %d: %d bytes left after the answer", i, n)
		}
	}
}

// TestLineEnds holds a Line over TCP to each way a wait ends without an
// answer: the server closing the connection while the line idles, a
// close right after an answer that did not announce it (seen by the next
// exchange), the exchange's deadline, and Close from another goroutine
// while Wait is parked with no request outstanding.
func TestLineEnds(t *testing.T) {
	addr, conns := lineServer(t)
	answer := func(step string, l *Line, path string) {
		t.Helper()
		if err := l.Send(time.Time{}, path, "h"); err != nil {
			t.Fatalf("%s: Send: %v", step, err)
		}
		if err := l.Wait(); err != nil {
			t.Fatalf("%s: Wait: %v", step, err)
		}
		if status, _, err := l.Answer(nil); err != nil || status != 200 {
			t.Fatalf("%s: Answer = %d, %v; want 200, nil", step, status, err)
		}
	}

	l := dialLine(t, addr)
	answer("idle close", l, "/ok")
	sc := <-conns
	waited := make(chan error, 1)
	go func() { waited <- l.Wait() }()
	time.Sleep(20 * time.Millisecond) // the Wait parks, with no request outstanding
	sc.Close()
	if err := <-waited; !errors.Is(err, io.EOF) {
		t.Errorf("idle, closed by the server: Wait = %v, want io.EOF", err)
	}

	l = dialLine(t, addr)
	<-conns
	answer("bye", l, "/bye")
	err := l.Send(time.Time{}, "/ok", "h")
	if err == nil {
		err = l.Wait()
	}
	if err == nil {
		t.Errorf("after an unannounced close: Send and Wait succeeded, want an error")
	}

	l = dialLine(t, addr)
	<-conns
	if err := l.Send(time.Now().Add(20*time.Millisecond), "/hold", "h"); err != nil {
		t.Fatalf("hold: Send: %v", err)
	}
	if err := l.Wait(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("hold past the deadline: Wait = %v, want os.ErrDeadlineExceeded", err)
	}

	l = dialLine(t, addr)
	<-conns
	go func() { waited <- l.Wait() }()
	time.Sleep(time.Millisecond)
	l.Close()
	if err := <-waited; !errors.Is(err, net.ErrClosed) {
		t.Errorf("idle, closed by Close: Wait = %v, want net.ErrClosed", err)
	}
}
