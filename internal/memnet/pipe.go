package memnet

import (
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// pipeBuffer bounds the bytes one direction of a connection holds unread,
// as a socket's send and receive buffers do; a writer past it waits for the
// reader.
const pipeBuffer = 256 << 10

// newPipe returns the two ends of a buffered in-memory connection. Unlike
// net.Pipe, a Write returns once its bytes are buffered, without waiting for
// the reader to take them, so that a request or a response costs one
// wake-up of the other side rather than two. Every wait is on channels, so
// a goroutine blocked on either end is durably blocked under
// testing/synctest.
func newPipe() (*end, *end) {
	a, b := newHalf(), newHalf()
	x := &end{rd: a, wr: b, rdl: newDeadline(), wrl: newDeadline(), closed: make(chan struct{})}
	y := &end{rd: b, wr: a, rdl: newDeadline(), wrl: newDeadline(), closed: make(chan struct{})}
	return x, y
}

// half is one direction of a pipe: bytes written by one end, read by the
// other.
type half struct {
	mu     sync.Mutex
	buf    []byte
	off    int  // read position in buf
	eof    bool // the writer closed: reads past the buffer get io.EOF
	gone   bool // the reader closed: writes fail
	data   chan struct{}
	space  chan struct{}
	closed chan struct{} // closed when either side closed
	once   sync.Once
}

func newHalf() *half {
	return &half{data: make(chan struct{}, 1), space: make(chan struct{}, 1), closed: make(chan struct{})}
}

// signal wakes a waiter on ch, if any, without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (h *half) shut(reader bool) {
	h.mu.Lock()
	if reader {
		h.gone = true
	} else {
		h.eof = true
	}
	h.mu.Unlock()
	h.once.Do(func() { close(h.closed) })
}

// end is one end of a pipe; it implements net.Conn but for the addresses,
// which conn adds.
type end struct {
	rd, wr     *half
	rdl, wrl   *deadline
	closeOnce  sync.Once
	closed     chan struct{}
	readMu     sync.Mutex // one Read at a time, as on a socket
	writeMu    sync.Mutex // one Write at a time, so writes do not interleave
	localAddr  net.Addr
	remoteAddr net.Addr
}

func (e *end) Read(p []byte) (int, error) {
	e.readMu.Lock()
	defer e.readMu.Unlock()
	h := e.rd
	for {
		select {
		case <-e.closed:
			return 0, io.ErrClosedPipe
		default:
		}
		if e.rdl.expired() {
			return 0, os.ErrDeadlineExceeded
		}
		h.mu.Lock()
		if n := len(h.buf) - h.off; n > 0 {
			c := copy(p, h.buf[h.off:])
			h.off += c
			if h.off == len(h.buf) {
				h.buf, h.off = h.buf[:0], 0
			}
			h.mu.Unlock()
			signal(h.space)
			return c, nil
		}
		if h.eof {
			h.mu.Unlock()
			return 0, io.EOF
		}
		h.mu.Unlock()
		if len(p) == 0 {
			return 0, nil
		}
		select {
		case <-h.data:
		case <-h.closed:
			// Loop: the writer's close is EOF after the buffer, and
			// ours is ErrClosedPipe.
			h.mu.Lock()
			eof := h.eof && len(h.buf) == h.off
			h.mu.Unlock()
			if eof {
				return 0, io.EOF
			}
			select {
			case <-e.closed:
				return 0, io.ErrClosedPipe
			default:
			}
		case <-e.closed:
			return 0, io.ErrClosedPipe
		case <-e.rdl.wait():
			return 0, os.ErrDeadlineExceeded
		}
	}
}

func (e *end) Write(p []byte) (int, error) {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	h := e.wr
	n := 0
	for {
		select {
		case <-e.closed:
			return n, io.ErrClosedPipe
		default:
		}
		if e.wrl.expired() {
			return n, os.ErrDeadlineExceeded
		}
		h.mu.Lock()
		if h.gone {
			h.mu.Unlock()
			return n, io.ErrClosedPipe
		}
		room := pipeBuffer - (len(h.buf) - h.off)
		if room > 0 {
			c := min(room, len(p)-n)
			if h.off > 0 && len(h.buf)+c > cap(h.buf) {
				// Move the unread bytes down rather than grow.
				h.buf = h.buf[:copy(h.buf, h.buf[h.off:])]
				h.off = 0
			}
			h.buf = append(h.buf, p[n:n+c]...)
			n += c
			h.mu.Unlock()
			signal(h.data)
			if n == len(p) {
				return n, nil
			}
			continue
		}
		h.mu.Unlock()
		select {
		case <-h.space:
		case <-h.closed:
		case <-e.closed:
			return n, io.ErrClosedPipe
		case <-e.wrl.wait():
			return n, os.ErrDeadlineExceeded
		}
	}
}

// Close closes this end: its own reads and writes fail with
// io.ErrClosedPipe, the other end reads what was written before and then
// io.EOF, and its writes fail.
func (e *end) Close() error {
	e.closeOnce.Do(func() {
		close(e.closed)
		e.wr.shut(false)
		e.rd.shut(true)
	})
	return nil
}

func (e *end) LocalAddr() net.Addr  { return e.localAddr }
func (e *end) RemoteAddr() net.Addr { return e.remoteAddr }

func (e *end) SetDeadline(t time.Time) error {
	e.rdl.set(t)
	e.wrl.set(t)
	return nil
}

func (e *end) SetReadDeadline(t time.Time) error  { e.rdl.set(t); return nil }
func (e *end) SetWriteDeadline(t time.Time) error { e.wrl.set(t); return nil }

// deadline is a settable deadline whose wait channel closes when it
// passes, as net.Pipe's is. It keeps one timer for its life, reset on each
// set, since net/http and the proxy set a connection's deadlines a few
// times a request.
type deadline struct {
	mu     sync.Mutex
	at     time.Time     // the deadline; zero means none
	timer  *time.Timer   // made on the first deadline in the future; runs fire
	cancel chan struct{} // closed when the deadline passes
}

func newDeadline() *deadline { return &deadline{cancel: make(chan struct{})} }

// set sets the deadline; the zero time means none. A time in the past
// makes waits end at once, which is how net/http aborts a blocked read.
func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.at = t
	closed := isClosed(d.cancel)
	dur := time.Until(t)
	if t.IsZero() || dur <= 0 {
		if d.timer != nil {
			d.timer.Stop() // one already running finds d.at changed
		}
		switch {
		case t.IsZero() && closed:
			d.cancel = make(chan struct{})
		case !t.IsZero() && !closed:
			close(d.cancel)
		}
		return
	}
	if closed {
		d.cancel = make(chan struct{})
	}
	if d.timer == nil {
		d.timer = time.AfterFunc(dur, d.fire)
	} else {
		d.timer.Reset(dur)
	}
}

// fire closes the wait channel if the deadline has passed: the timer's
// function, which a stopped or reset timer may still run once late.
func (d *deadline) fire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.at.IsZero() && !time.Now().Before(d.at) && !isClosed(d.cancel) {
		close(d.cancel)
	}
}

func (d *deadline) wait() chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cancel
}

func (d *deadline) expired() bool { return isClosed(d.wait()) }

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
