package h1

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// reqContext is a request's context. It is made as the request is read,
// for nothing: only when something asks for its Done or Err, or derives a
// context from it, does it make the cancellable context behind it and
// have the connection watched for the client's end (see Server).
type reqContext struct {
	parent context.Context
	c      *serverConn
	once   sync.Once
	ready  atomic.Bool // ctx and stop are set
	ctx    context.Context
	stop   context.CancelFunc
}

func (x *reqContext) init() {
	x.once.Do(func() {
		x.ctx, x.stop = context.WithCancel(x.parent)
		x.ready.Store(true)
		x.c.startWatch(x)
	})
}

func (x *reqContext) cancel() { x.stop() }

func (x *reqContext) Deadline() (time.Time, bool) { return x.parent.Deadline() }

// Value looks key up in the parent; once the context behind x is made,
// in it, which lets the context package find it as a derived context's
// parent and link the child to it directly.
func (x *reqContext) Value(key any) any {
	if x.ready.Load() {
		return x.ctx.Value(key)
	}
	return x.parent.Value(key)
}

func (x *reqContext) Done() <-chan struct{} { x.init(); return x.ctx.Done() }
func (x *reqContext) Err() error            { x.init(); return x.ctx.Err() }

// AfterFunc lets a context derived from x follow it without a goroutine
// of the context package's own.
func (x *reqContext) AfterFunc(f func()) (stop func() bool) {
	x.init()
	return context.AfterFunc(x.ctx, f)
}

func (x *reqContext) String() string { return "h1 request context" }

// requestBody is a request's body as the handler reads it: the header deadline
// lifted, 100 Continue sent first when the client waits for it, and its
// end noted for the watch and for keep-alive.
type requestBody struct {
	c            *serverConn
	w            *response
	rc           io.ReadCloser
	started      bool // read from
	wantContinue bool
	sentContinue bool
	eof          bool
	err          error // a read error other than io.EOF
}

func (b *requestBody) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	if !b.started {
		b.started = true
		b.c.mu.Lock()
		b.c.clearDeadline()
		b.c.mu.Unlock()
	}
	if b.wantContinue && !b.sentContinue {
		b.sentContinue = true
		if !b.w.wroteHeader {
			b.c.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
			if err := b.c.bw.Flush(); err != nil {
				b.w.err = err
			}
		}
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
		b.c.sawBodyEOF()
	} else if err != nil {
		b.err = err
	}
	return n, err
}

func (b *requestBody) Close() error { return nil }

// drain reads what the handler left of the body, up to
// maxPostHandlerRead, and reports whether the connection can carry
// another request after it.
func (b *requestBody) drain() bool {
	if b.eof {
		return true
	}
	if b.err != nil || b.wantContinue && !b.sentContinue {
		return false // the client is still waiting to send it
	}
	_, err := io.CopyN(io.Discard, b, maxPostHandlerRead+1)
	return err == io.EOF
}
