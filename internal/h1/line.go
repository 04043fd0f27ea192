package h1

import (
	"bufio"
	"net"
	"time"
)

// Line is one keep-alive connection on which one goroutine sends GET
// requests (Send) while another, parked on the connection, waits for each
// answer (Wait) and reads it (Answer): so a request goes out from the
// goroutine that decides it is due, with no hand-off to another goroutine,
// and the one that reads is woken only by the answer. It speaks what
// Client.GetBy speaks. One request at a time: the next Send only after the
// answer was read.
type Line struct {
	c  net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

// NewLine returns a Line over nc.
func NewLine(nc net.Conn) *Line {
	return &Line{c: nc, br: bufio.NewReaderSize(nc, 4096), bw: bufio.NewWriterSize(nc, 1024)}
}

// Send writes a GET for uri with Host host, the exchange bounded by
// deadline (zero: none; running out of it fails Send or Wait with an error
// that is os.ErrDeadlineExceeded).
func (l *Line) Send(deadline time.Time, uri, host string) error {
	l.c.SetDeadline(deadline)
	writeGet(l.bw, uri, host)
	return l.bw.Flush()
}

// Wait waits for the first byte of an answer, or the connection's end.
func (l *Line) Wait() error {
	_, err := l.br.Peek(1)
	return err
}

// Answer reads the answer whose first byte Wait saw, as Client.GetBy does,
// and says whether the connection may carry another request.
func (l *Line) Answer(header func(name, value []byte)) (status int, keep bool, err error) {
	return readAnswer(l.br, header)
}

// Close closes the connection, which ends a Wait at once.
func (l *Line) Close() error { return l.c.Close() }
