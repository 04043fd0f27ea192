package limiterproxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// scriptedUpstream is an upstream whose behaviour the request path
// chooses; it speaks raw bytes so that it can misbehave.
type scriptedUpstream struct {
	ln   net.Listener
	done chan struct{}
	wg   sync.WaitGroup
}

func startScriptedUpstream(t *testing.T) *scriptedUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &scriptedUpstream{ln: ln, done: make(chan struct{})}
	u.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.wg.Go(func() { u.serve(c) })
		}
	})
	t.Cleanup(func() {
		close(u.done)
		ln.Close()
		u.wg.Wait()
	})
	return u
}

func (u *scriptedUpstream) addr() string { return u.ln.Addr().String() }

func (u *scriptedUpstream) serve(c net.Conn) {
	defer c.Close()
	context.AfterFunc(doneContext(u.done), func() { c.Close() })
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		return
	}
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			return
		}
		if l == "\r\n" {
			break
		}
	}
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return
	}
	switch fields[1] {
	case "/stall": // headers and a little of the body, then nothing
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc") //nolint:errcheck
	case "/upgrade": // a protocol switch, then nothing
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n") //nolint:errcheck
	case "/never": // reads whatever comes, never answers
		io.Copy(io.Discard, br) //nolint:errcheck
		return
	case "/noread": // reads no body, never answers
	case "/trickle": // response headers one byte every 200 ms
		for _, b := range []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") {
			if _, err := c.Write([]byte{b}); err != nil {
				return
			}
			select {
			case <-u.done:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
		return
	default:
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok") //nolint:errcheck
		return
	}
	<-u.done
}

// doneContext is a context done when done is closed.
func doneContext(done <-chan struct{}) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-done
		cancel()
	}()
	return ctx
}
