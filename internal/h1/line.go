package h1

import (
	"bufio"
	"io"
	"net"
	"sync/atomic"
	"time"
)

// Line is one keep-alive connection on which one goroutine sends GET
// requests (Send) while another, parked on the connection, waits for each
// answer (Wait) and reads it (Answer): so a request goes out from the
// goroutine that decides it is due, with no hand-off to another goroutine,
// and the one that reads is woken only by the answer. It speaks what
// Client.GetBy speaks. One request at a time: the next Send only after the
// answer was read.
//
// Over a connection of the runtime's poller (a *net.TCPConn), a Wait with
// no request sent parks on the poller without first trying a read that
// could only fail, which spares a system call per request (see
// pollReader).
type Line struct {
	c  net.Conn
	br *bufio.Reader
	bw *bufio.Writer
	// asked says a request was written, or is being written, whose answer
	// has not been read whole: until then a read may find bytes.
	asked atomic.Bool
}

// NewLine returns a Line over nc.
func NewLine(nc net.Conn) *Line {
	l := &Line{c: nc, bw: bufio.NewWriterSize(nc, 1024)}
	var r io.Reader = nc
	if pr := newPollReader(nc, &l.asked); pr != nil {
		r = pr
	}
	l.br = bufio.NewReaderSize(r, 4096)
	return l
}

// Send writes a GET for uri with Host host, the exchange bounded by
// deadline (zero: none; running out of it fails Send or Wait with an error
// that is os.ErrDeadlineExceeded).
func (l *Line) Send(deadline time.Time, uri, host string) error {
	l.c.SetDeadline(deadline)
	// Before the write: a Wait that has not seen it yet parks on the
	// poller before the answer can make the connection readable.
	l.asked.Store(true)
	writeGet(l.bw, uri, host)
	return l.bw.Flush()
}

// ClearDeadline takes away the deadline of the last exchange, which the
// connection keeps after it, so that a line idle for longer does not
// time out.
func (l *Line) ClearDeadline() error { return l.c.SetDeadline(time.Time{}) }

// Wait waits for the first byte of an answer, or the connection's end.
func (l *Line) Wait() error {
	_, err := l.br.Peek(1)
	return err
}

// Answer reads the answer whose first byte Wait saw, as Client.GetBy does,
// and says whether the connection may carry another request.
func (l *Line) Answer(header func(name, value []byte)) (status int, keep bool, err error) {
	status, keep, err = readAnswer(l.br, header)
	if err == nil {
		l.asked.Store(false)
	}
	return status, keep, err
}

// Close closes the connection, which ends a Wait at once.
func (l *Line) Close() error { return l.c.Close() }
