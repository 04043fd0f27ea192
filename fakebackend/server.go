package fakebackend

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"time"

	"stampede/internal/acceptq"
	"stampede/internal/h1"
)

// Server limits for Serve. Every connection carries one request (the
// backend answers Connection: close), so no idle or body timeouts matter.
const (
	readHeaderTimeout = 10 * time.Second
	maxHeaderBytes    = 64 << 10
	shutdownGrace     = 5 * time.Second
)

// Serve serves b on ln until ctx is done, then closes b (dropping requests
// in flight, as a killed gunicorn would) and the server, and returns nil;
// it returns the error if the server stops for another reason. Errors the
// server logs (bad requests, handler panics) go to errorLog; nil discards
// them.
//
// Unless Options.KeepAlive, Serve gates ln (see Gate) and, for a TCP
// listener, sets its listen(2) backlog to the pool's (see SetBacklog): the
// kernel then holds the backlog, and drops or refuses what overflows it, as
// it does in front of gunicorn. With KeepAlive every connection is
// accepted and the pool's backlog is emulated behind it.
func (b *Backend) Serve(ctx context.Context, ln net.Listener, errorLog io.Writer) error {
	if errorLog == nil {
		errorLog = io.Discard
	}
	// A sync worker does not read its connection while it works, and the
	// lean server reads it only for a handler that waits on its request's
	// context: see ServeHTTP.
	srv := &h1.Server{
		Handler:           b,
		ReadHeaderTimeout: readHeaderTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          log.New(errorLog, "fake backend: ", 0),
	}
	if !b.keepAlive {
		if err := SetBacklog(ln, b.Backlog()); err != nil {
			return fmt.Errorf("fake backend: %w", err)
		}
		q := acceptq.Reader(ln)
		b.mu.Lock()
		b.kernelQueue = q
		b.mu.Unlock()
		ln = b.Gate(ln)
		srv.ConnContext = b.ConnContext
		srv.DisableKeepAlives = true // a sync worker closes every connection
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		b.Close()
		return err
	case <-ctx.Done():
	}
	b.Close()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	// The server stopped because ctx is done: Serve returns
	// http.ErrServerClosed, or net.ErrClosed from the gate's Accept when
	// Close came before Shutdown marked the server closed.
	<-errc
	return nil
}
