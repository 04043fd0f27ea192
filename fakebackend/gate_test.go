package fakebackend

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"stampede/internal/testproc"
	"stampede/workerpool"
)

// chanListener is an in-memory listener: Accept takes the next connection
// pushed into conns, as a memory transport's bounded accept queue would
// hand them, and counts the calls.
type chanListener struct {
	conns   chan net.Conn
	closed  chan struct{}
	once    sync.Once
	mu      sync.Mutex
	accepts int
}

func newChanListener(n int) *chanListener {
	return &chanListener{conns: make(chan net.Conn, n), closed: make(chan struct{})}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		l.mu.Lock()
		l.accepts++
		l.mu.Unlock()
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *chanListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

func (l *chanListener) accepted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.accepts
}

// TestGateAcceptsForFreeWorkers checks that Serve takes a connection off a
// listener only when a worker is free, whatever the listener: the others
// stay in its queue, where a kernel (or a memory transport) holds them.
func TestGateAcceptsForFreeWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Options{Pool: workerpool.Config{Workers: 2}, Routes: []Route{{Path: "/", Service: workerpool.Constant{D: time.Second}}}})
		ln := newChanListener(8)
		ctx, cancel := context.WithCancel(t.Context())
		served := make(chan error, 1)
		go func() { served <- b.Serve(ctx, ln, nil) }()

		type result struct {
			status int
			at     time.Duration
		}
		t0 := time.Now()
		results := make(chan result, 3)
		for range 3 {
			client, server := net.Pipe()
			ln.conns <- server
			go func() {
				defer client.Close()
				io.WriteString(client, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
				resp, err := http.ReadResponse(newReader(client), nil)
				if err != nil {
					results <- result{0, time.Since(t0)}
					return
				}
				io.Copy(io.Discard, resp.Body)
				results <- result{resp.StatusCode, time.Since(t0)}
			}()
		}
		synctest.Wait()
		if n := ln.accepted(); n != 2 {
			t.Errorf("step 1: %d connections accepted with 2 workers, want 2 (the third waits in the listener)", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := ln.accepted(); n != 3 {
			t.Errorf("step 2: %d accepted after the first two were served, want 3", n)
		}
		var ends []time.Duration
		for range 3 {
			r := <-results
			if r.status != 200 {
				t.Errorf("step 3: status %d, want 200", r.status)
			}
			ends = append(ends, r.at)
		}
		if ends[0] != time.Second || ends[1] != time.Second || ends[2] != 2*time.Second {
			t.Errorf("step 3: answered at %v, want 1s 1s 2s", ends)
		}
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

// TestServeBacklogOverflowTCP serves on a real TCP listener with one worker
// and --backlog 0 (Linux queues one connection) and sends four requests at
// once: none is refused or reset; those the kernel dropped connect on a SYN
// retransmission, a second or more later, and are served.
func TestServeBacklogOverflowTCP(t *testing.T) {
	b := mustNew(t, Options{Pool: workerpool.Config{Workers: 1, Backlog: -1}, Routes: []Route{{Path: "/", Service: workerpool.Constant{D: 300 * time.Millisecond}}}})
	if err := b.OverflowFidelity(nil); err != nil {
		t.Errorf("OverflowFidelity at time scale 1 without keep-alive: %v, want nil", err)
	}
	ln := testproc.Listen(t)
	if err := SetBacklog(ln, b.Backlog()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- b.Serve(ctx, ln, nil) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	url := "http://" + ln.Addr().String() + "/"
	queued := make(chan int, 1)
	go func() {
		// While the worker is busy, the kernel holds one connection.
		top := 0
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) && top == 0 {
			top = max(top, b.Stats().Queued)
			time.Sleep(5 * time.Millisecond)
		}
		queued <- top
	}()
	type result struct {
		status int
		took   time.Duration
		err    error
	}
	results := make(chan result, 4)
	for range 4 {
		go func() {
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
			start := time.Now()
			resp, err := client.Get(url)
			if err != nil {
				results <- result{err: err, took: time.Since(start)}
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			results <- result{status: resp.StatusCode, took: time.Since(start)}
		}()
	}
	late := 0
	for range 4 {
		r := <-results
		if r.err != nil || r.status != 200 {
			t.Errorf("status %d error %v after %v, want 200: the kernel drops, never refuses", r.status, r.err, r.took)
		}
		// One worker and one queued take 0.6 s; a third or fourth
		// served within a second connected at once, which the backlog
		// forbids. Only lower bounds: a loaded machine is late, never
		// early.
		if r.took >= time.Second {
			late++
		}
	}
	if late == 0 {
		t.Errorf("every request served within 1s: no SYN was dropped, want at least one connecting on a retransmission")
	}
	if s := b.Stats(); s.Served != 4 || s.Refused != 0 {
		t.Errorf("stats %+v: want 4 served, none refused", s)
	}
	// Listen backlog 0 holds one connection, but Linux checks a full
	// accept queue without a lock: handshakes completing on several CPUs at
	// once may each find room, so the queue can overshoot by one per CPU.
	if q := <-queued; q < 1 || q > 1+runtime.NumCPU() {
		t.Errorf("the kernel's accept queue seen at %d, want 1 (listen backlog 0 holds one) up to %d (one more per CPU racing)", q, 1+runtime.NumCPU())
	}
}

// TestOverflowFidelity checks what the live engine is told.
func TestOverflowFidelity(t *testing.T) {
	tcp := testproc.Listen(t)
	mem := newChanListener(1)
	for _, c := range []struct {
		opts Options
		ln   net.Listener
		want error
	}{
		{Options{}, tcp, nil},
		{Options{TimeScale: 0.03}, tcp, ErrOverflowWallTime},
		{Options{TimeScale: 0.03}, mem, nil},
		{Options{KeepAlive: true}, mem, ErrOverflowEmulated},
	} {
		b := mustNew(t, c.opts)
		if got := b.OverflowFidelity(c.ln); got != c.want {
			t.Errorf("OverflowFidelity(%T) with %+v = %v, want %v", c.ln, c.opts, got, c.want)
		}
	}
}

func newReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }
