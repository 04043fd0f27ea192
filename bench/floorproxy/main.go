// Command floorproxy is the least a reverse proxy written in Go can do per
// request, for bench/proxy.sh to measure beside stampede proxy and nginx:
// it is the floor under any Go proxy that, like nginx by default, opens a
// new upstream connection for every request.
//
//	floorproxy -listen 127.0.0.1:18483 -upstream 127.0.0.1:18480 [-server raw]
//
// For every request it dials the upstream, writes a minimal HTTP/1.0 GET,
// reads the answer with http.ReadResponse and copies its status and body
// back. With -keepalive N it keeps up to N idle upstream connections and
// speaks HTTP/1.1 on them instead: the floor under a proxy with nginx's
// upstream keepalive. It limits nothing, forwards no headers and knows no timeouts; it is
// not a proxy to use. -server nethttp (the default) serves clients with
// net/http's server; -server raw serves them with a bare loop over
// http.ReadRequest, without net/http's server, its deadlines or its
// background read, to show what is left of Go's own cost without it;
// -server h1 serves them with internal/h1's lean server, which stampede
// proxy and stampede's in-memory pair use (its handler here never waits on
// the request's context, so no connection is watched). -server epoll, with
// -keepalive only and on Linux only, bypasses Go's netpoller and its
// goroutines altogether: one loop per P, each on its own OS thread with
// its own epoll instance, SO_REUSEPORT listener, clients and idle upstream
// connections, edge-triggered, reading a socket only when epoll has said
// it has something, as nginx's workers do (epoll_linux.go): the floor
// under a Go proxy built in nginx's shape. Its system calls go through
// RawSyscall, out of the scheduler's sight; -raw=false makes them through
// Syscall, as the runtime's own networking does, to show what that costs.
package main

import (
	"bufio"
	"flag"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"

	"stampede/internal/h1"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18483", "address to serve on")
	upstream := flag.String("upstream", "127.0.0.1:18480", "host:port of the upstream")
	server := flag.String("server", "nethttp", "nethttp, h1, raw or epoll")
	keepAlive := flag.Int("keepalive", 0, "idle upstream connections kept (with -server epoll, per loop); 0 dials one per request")
	raw := flag.Bool("raw", true, "with -server epoll, system calls through RawSyscall, out of the runtime's sight (see serveEpoll)")
	flag.Parse()
	if *server == "epoll" {
		if *keepAlive <= 0 {
			log.Fatal("floorproxy: -server epoll: want -keepalive 1 or more")
		}
		log.Fatal(serveEpoll(*listen, *upstream, *keepAlive, *raw))
	}
	if *keepAlive > 0 {
		idle = make(chan *upConn, *keepAlive)
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	dialer := &net.Dialer{KeepAlive: -1}
	switch *server {
	case "nethttp":
		log.Fatal(http.Serve(ln, floor(dialer, *upstream)))
	case "h1":
		log.Fatal((&h1.Server{Handler: floor(dialer, *upstream)}).Serve(ln))
	case "raw":
		for {
			c, err := ln.Accept()
			if err != nil {
				log.Fatal(err)
			}
			go serveRaw(c, dialer, *upstream)
		}
	default:
		log.Fatalf("floorproxy: -server %q: want nethttp, h1, raw or epoll", *server)
	}
}

// floor is the handler of -server nethttp and h1.
func floor(d *net.Dialer, upstream string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, body, err := roundTrip(d, upstream, r)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		w.Write(body) //nolint:errcheck
	})
}

// upConn is an upstream connection kept with its reader.
type upConn struct {
	net.Conn
	br *bufio.Reader
}

// idle holds the kept upstream connections (-keepalive); nil keeps none.
var idle chan *upConn

// roundTrip sends r's Host to upstream on a new connection, or with
// -keepalive on a kept one, and returns the answer's status and body.
func roundTrip(d *net.Dialer, upstream string, r *http.Request) (int, []byte, error) {
	if idle != nil {
		return keptRoundTrip(d, upstream, r)
	}
	c, err := d.DialContext(r.Context(), "tcp", upstream)
	if err != nil {
		return 0, nil, err
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET "+r.URL.RequestURI()+" HTTP/1.0\r\nHost: "+r.Host+"\r\nConnection: close\r\n\r\n"); err != nil {
		return 0, nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), r)
	if err != nil {
		return 0, nil, err
	}
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// serveRaw serves the requests of one keep-alive client connection.
func serveRaw(c net.Conn, d *net.Dialer, upstream string) {
	defer c.Close()
	br := bufio.NewReader(c)
	bw := bufio.NewWriter(c)
	for {
		r, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		status, body, err := roundTrip(d, upstream, r)
		if err != nil {
			status, body = http.StatusBadGateway, nil
		}
		bw.WriteString("HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n" +
			"Content-Type: text/plain\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n") //nolint:errcheck
		bw.Write(body) //nolint:errcheck
		if bw.Flush() != nil {
			return
		}
	}
}

// keptRoundTrip is roundTrip over a kept connection: a reused one that
// fails (the upstream closed it while idle) is dropped for the next, and
// only a new one's failure is an error.
func keptRoundTrip(d *net.Dialer, upstream string, r *http.Request) (int, []byte, error) {
	for {
		var c *upConn
		reused := true
		select {
		case c = <-idle:
		default:
			nc, err := d.DialContext(r.Context(), "tcp", upstream)
			if err != nil {
				return 0, nil, err
			}
			c, reused = &upConn{Conn: nc, br: bufio.NewReader(nc)}, false
		}
		status, body, keep, err := exchange(c, r)
		if err != nil {
			c.Close()
			if reused {
				continue
			}
			return 0, nil, err
		}
		if !keep {
			c.Close()
			return status, body, nil
		}
		select {
		case idle <- c:
		default:
			c.Close()
		}
		return status, body, nil
	}
}

// exchange writes a minimal HTTP/1.1 GET on c and reads the answer.
func exchange(c *upConn, r *http.Request) (status int, body []byte, keep bool, err error) {
	if _, err := io.WriteString(c, "GET "+r.URL.RequestURI()+" HTTP/1.1\r\nHost: "+r.Host+"\r\n\r\n"); err != nil {
		return 0, nil, false, err
	}
	resp, err := http.ReadResponse(c.br, r)
	if err != nil {
		return 0, nil, false, err
	}
	body, err = io.ReadAll(resp.Body)
	return resp.StatusCode, body, !resp.Close, err
}
