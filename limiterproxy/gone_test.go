package limiterproxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"stampede/limit"
)

// TestSlotFreeAfterDisconnect holds a slot with one client, hangs up, and
// at once sends another request for the same key: nginx has freed the slot
// by then (limit_conn.t's "passed" after closing the holder), and so must
// the Handler, however busy the machine.
func TestSlotFreeAfterDisconnect(t *testing.T) {
	held := make(chan struct{}, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			held <- struct{}{}
			<-r.Context().Done()
			return
		}
		io.WriteString(w, "ok")
	}))
	defer up.Close()
	p, err := limit.NewPolicy(limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewUnstartedServer(nil)
	front.Config = NewServer(&Handler{Policy: p, Next: NewProxy(mustURL(t, up.URL), ProxyOptions{})}, ServerOptions{})
	front.Start()
	defer front.Close()
	cl := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	defer cl.CloseIdleConnections()

	const steps = 100
	rejected := 0
	for i := range steps {
		c, err := net.Dial("tcp", front.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET /hold HTTP/1.1\r\nHost: site1\r\n\r\n")
		select {
		case <-held:
		case <-time.After(10 * time.Second):
			b := make([]byte, 200)
			c.SetReadDeadline(time.Now().Add(time.Second))
			n, _ := c.Read(b)
			t.Fatalf("step %d: the holder never reached the upstream; it was answered %q", i, b[:n])
		}
		c.Close()
		req, _ := http.NewRequest("GET", front.URL+"/", nil)
		req.Host = "site1"
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			rejected++
		}
	}
	// The Handler asks the kernel, so it misses only a FIN the kernel has
	// not yet taken in when the next connection's request is read: on a
	// loaded machine loopback packets queued on two processors may be
	// handled out of order, which nginx meets too. Before the kernel was
	// asked, 20 to 45 in 100 were rejected here.
	t.Logf("%d of %d requests sent right after the holder hung up were rejected", rejected, steps)
	if rejected > 2 {
		t.Errorf("%d of %d requests sent right after the holder hung up were rejected, want at most 2", rejected, steps)
	}
}

// BenchmarkHandlerHolders is BenchmarkHandler for requests served by
// NewServer, whose client connection the Handler registers while they
// hold slots.
func BenchmarkHandlerHolders(b *testing.B) {
	p, err := limit.NewPolicy(limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 65535}}})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := withClientConn(context.Background(), c)
	h := &Handler{Policy: p, Next: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := httptest.NewRequest("GET", "http://site1/", nil).WithContext(ctx)
		w := &discardWriter{h: http.Header{}}
		for pb.Next() {
			h.ServeHTTP(w, r)
		}
	})
}

// TestHoldersBesideSlots admits and ends requests for one key from
// several goroutines, half of whose clients hang up while they hold a
// slot, and checks, under the key's shard of the holders, that every slot
// the key has taken is held by a request registered there: a reap that
// found a slot taken without its holder (a request between taking it and
// registering, or between unregistering and freeing it) would reject a
// request nginx admits.
func TestHoldersBesideSlots(t *testing.T) {
	p, err := limit.NewPolicy(limit.Config{Conn: []limit.ConnSpec{{Key: "$host", PerKey: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{Policy: p, Next: http.NotFoundHandler()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	var dialMu sync.Mutex
	pair := func() (client, server net.Conn) {
		dialMu.Lock()
		defer dialMu.Unlock()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Error(err)
			return nil, nil
		}
		return c, <-accepted
	}

	const workers, rounds = 4, 150
	var wg sync.WaitGroup
	done := make(chan struct{})
	var admitted, rejected atomic.Int64
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				c, s := pair()
				if c == nil {
					return
				}
				rc, err := s.(*net.TCPConn).SyscallConn()
				if err != nil {
					t.Error(err)
					return
				}
				var a admission
				r := httptest.NewRequest("GET", "http://site1/", nil)
				if h.admit(&a, httptest.NewRecorder(), r, rc, nil) {
					admitted.Add(1)
					if (w+i)%2 == 0 {
						c.Close() // gone: another request's reap may free the slot
					}
				} else {
					rejected.Add(1)
				}
				for range 3 {
					runtime.Gosched()
				}
				a.end(h)
				c.Close()
				s.Close()
			}
		})
	}
	go func() { wg.Wait(); close(done) }()

	rk := ruleKey{0, "site1"}
	sh := h.holders.shard(rk)
	samples, bad := 0, 0
	for {
		select {
		case <-done:
			t.Logf("%d samples, %d admitted, %d rejected", samples, admitted.Load(), rejected.Load())
			if bad > 0 {
				t.Errorf("%d of %d samples found a slot taken without its holder registered", bad, samples)
			}
			return
		default:
		}
		sh.mu.Lock()
		holding := 0
		for _, x := range sh.byKey[rk] {
			if !x.released.Load() {
				holding++
			}
		}
		inFlight := p.Conn[0].Limiter.InFlight("site1")
		sh.mu.Unlock()
		samples++
		if inFlight != holding {
			if bad == 0 {
				t.Logf("sample %d: %d slots taken, %d holders", samples, inFlight, holding)
			}
			bad++
		}
		runtime.Gosched()
	}
}
