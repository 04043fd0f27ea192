package limiterproxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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
