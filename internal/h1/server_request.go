package h1

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// reqContext is a request's context. It is made as the request is read,
// for nothing: only when something asks for its Done or Err, or derives a
// context from it, does it make the cancellable context behind it and
// have the connection watched for the client's end (see Server). A
// function scheduled with its AfterFunc, as context.AfterFunc schedules
// one, makes no context either: it waits in the reqContext itself.
type reqContext struct {
	parent context.Context
	c      *serverConn
	once   sync.Once
	ready  atomic.Bool // ctx and stop are set
	ctx    context.Context
	stop   context.CancelFunc

	mu       sync.Mutex
	canceled bool     // the client went away or the request ended
	after    []func() // AfterFunc's functions, nil once run or stopped
	afterBuf [1]func()
}

func (x *reqContext) init() {
	x.once.Do(func() {
		ctx, stop := context.WithCancel(x.parent)
		x.mu.Lock()
		x.ctx, x.stop = ctx, stop
		canceled := x.canceled
		x.mu.Unlock()
		if canceled {
			stop()
		}
		x.ready.Store(true)
		x.c.startWatch(x)
	})
}

// cancel ends the request's context: the context behind it, if made,
// is cancelled, and AfterFunc's functions still waiting run, each on a
// goroutine of its own, as context.AfterFunc runs them.
func (x *reqContext) cancel() {
	x.mu.Lock()
	x.canceled = true
	stop, after := x.stop, x.after
	x.after = nil
	x.mu.Unlock()
	if stop != nil {
		stop()
	}
	for _, f := range after {
		if f != nil {
			go f()
		}
	}
}

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

// AfterFunc arranges for f to run on a goroutine of its own once the
// request's context is done, as context.AfterFunc does: the connection is
// watched, but no context is made for it unless the parent can end by
// itself. context.AfterFunc asks for Done first, which makes the context;
// only a caller that calls this method itself (limiterproxy's upstream
// exchange) saves it. stop reports whether it kept f from running.
func (x *reqContext) AfterFunc(f func()) (stop func() bool) {
	if x.parent.Done() != nil {
		x.init()
		return context.AfterFunc(x.ctx, f)
	}
	x.mu.Lock()
	if x.canceled {
		x.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	if x.after == nil {
		x.after = x.afterBuf[:0]
	}
	i := len(x.after)
	x.after = append(x.after, f)
	x.mu.Unlock()
	x.c.startWatch(x)
	return func() bool {
		x.mu.Lock()
		defer x.mu.Unlock()
		if i >= len(x.after) || x.after[i] == nil {
			return false // run already, or stopped
		}
		x.after[i] = nil
		return true
	}
}

func (x *reqContext) String() string { return "h1 request context" }

// requestBody is a request's body as the handler reads it: the header deadline
// lifted, 100 Continue sent first when the client waits for it, and its
// end noted for the watch and for keep-alive.
type requestBody struct {
	c            *serverConn
	w            *response
	rc           io.ReadCloser
	length       int64 // the declared length; -1 for none (chunked)
	read         int64 // the bytes read
	started      bool  // read from
	wantContinue bool
	sentContinue bool
	eof          bool
	err          error // a read error other than io.EOF
	// discarding: the response is committed; what the handler left of
	// the body is the server's to read and drop (drain), and the
	// handler reads its end.
	discarding atomic.Bool
}

func (b *requestBody) Read(p []byte) (int, error) {
	if b.eof || b.discarding.Load() {
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
	b.read += int64(n)
	if err == io.EOF {
		b.eof = true
		b.c.sawBodyEOF()
	} else if err != nil {
		b.err = err
	}
	return n, err
}

func (b *requestBody) Close() error { return nil }

// discard marks the body as the server's to drain once the response is
// written, as nginx discards a body it does not read after its answer
// (ngx_http_discard_request_body), so that the answer does not wait for
// the body, and reports whether the connection can carry another request
// after it: not when the client still waits for 100 Continue to send it,
// or more than maxPostHandlerRead of it is known to be left.
func (b *requestBody) discard() bool {
	if b.eof {
		return true
	}
	if b.err != nil || b.wantContinue && !b.sentContinue {
		return false // the client is still waiting to send it
	}
	b.discarding.Store(true)
	return b.length < 0 || b.length-b.read <= maxPostHandlerRead
}

// drain reads and drops what the handler left of the body, up to
// maxPostHandlerRead, with the header's deadline lifted and a deadline of
// its own, as nginx's discarding reads have: lingerTimeout for each read,
// lingerTime in all. It returns nil when the body ended, so that the
// connection can carry another request, errBodyOver when more of it was
// left, else the read's error.
func (b *requestBody) drain() error {
	if b.eof {
		return nil
	}
	if b.err != nil {
		return b.err
	}
	c := b.c
	end := time.Now().Add(lingerTime)
	buf := c.hold[:]
	for left := int64(maxPostHandlerRead) + 1; left > 0; {
		if !c.lingerDeadline(end) {
			return os.ErrDeadlineExceeded
		}
		c.deadline = true
		n, err := b.rc.Read(buf[:min(int64(len(buf)), left)])
		left -= int64(n)
		if err == io.EOF {
			b.eof = true
			return nil
		}
		if err != nil {
			return err
		}
	}
	return errBodyOver
}

// errBodyOver says more of a body was left than drain reads.
var errBodyOver = errors.New("h1: more of the request body left than the server discards")
