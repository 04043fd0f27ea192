package fakebackend

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"stampede/internal/testproc"
	"stampede/workerpool"
)

// TestBackendLoopback checks over real connections that a refused and a
// killed request reach the client as a dropped connection.
func TestBackendLoopback(t *testing.T) {
	isDrop := func(err error) bool {
		return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	}
	get := func(ctx context.Context, srv *httptest.Server, path string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		return srv.Client().Do(req)
	}

	t.Run("served and killed", func(t *testing.T) {
		b := mustNew(t, Options{
			Pool:      workerpool.Config{Workers: 1, Timeout: time.Second},
			Routes:    []Route{{Path: "/killed", Service: workerpool.Constant{D: 2 * time.Second}}, {Path: "/", Service: workerpool.Constant{D: 0}}},
			TimeScale: 0.01, // the timeout fires after 10ms
		})
		srv := httptest.NewServer(b)
		defer srv.Close()
		resp, err := get(t.Context(), srv, "/")
		if err != nil {
			t.Fatalf("step 1: GET /: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !resp.Close || string(body) != "/: served in 0s\n" {
			t.Errorf("step 1: GET /: status %d close %v body %q, want 200, a closed connection, a body", resp.StatusCode, resp.Close, body)
		}
		if _, err := get(t.Context(), srv, "/killed"); !isDrop(err) {
			t.Errorf("step 2: GET /killed: error %v, want the connection dropped (EOF)", err)
		}
		srv.Close()
		if s := b.Stats(); s.Served != 1 || s.Killed != 1 || s.Busy != 0 {
			t.Errorf("stats %+v: want 1 served, 1 killed, none busy", s)
		}
	})

	t.Run("refused", func(t *testing.T) {
		b := mustNew(t, Options{
			Pool:   workerpool.Config{Workers: 1, Backlog: -1, Overflow: workerpool.Reset, OnClientAbort: workerpool.Cancel},
			Routes: []Route{{Path: "/", Service: workerpool.Constant{D: time.Hour}}},
		})
		srv := httptest.NewServer(b)
		defer srv.Close()
		// Hold the only worker, then a second request finds no backlog.
		holdCtx, release := context.WithCancel(t.Context())
		held := make(chan error, 1)
		go func() {
			_, err := get(holdCtx, srv, "/hold")
			held <- err
		}()
		waitBusy(t, b, "step 1: /hold")
		if _, err := get(t.Context(), srv, "/refused"); !isDrop(err) {
			t.Errorf("step 2: GET with every worker busy and no backlog: error %v, want the connection dropped (EOF)", err)
		}
		release()
		if err := <-held; !errors.Is(err, context.Canceled) {
			t.Errorf("step 3: the held request: %v, want context.Canceled", err)
		}
		// srv.Close waits for the handler; the cancel policy lets it go at once.
		srv.Close()
		if s := b.Stats(); s.Refused != 1 || s.Cancelled != 1 || s.Busy != 0 {
			t.Errorf("stats %+v: want 1 refused, 1 cancelled, none busy", s)
		}
	})
}

func BenchmarkBackend(b *testing.B) {
	be, _ := New(Options{Pool: workerpool.Config{Workers: 8}})
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	b.ReportAllocs()
	for b.Loop() {
		be.ServeHTTP(httptest.NewRecorder(), r)
	}
}

func TestBackendClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Options{Pool: workerpool.Config{Workers: 1}, Routes: []Route{{Path: "/", Service: workerpool.Constant{D: time.Hour}}}})
		run, queued := serve(t, b, "/"), serve(t, b, "/")
		time.Sleep(time.Minute)
		b.Close()
		b.Close() // idempotent
		if got := run.took(); got != time.Minute || !run.aborted {
			t.Errorf("step 1: running request after Close: took %v aborted %v, want dropped at 1m", got, run.aborted)
		}
		if got := queued.took(); got != time.Minute || !queued.aborted {
			t.Errorf("step 2: queued request after Close: took %v aborted %v, want dropped at 1m", got, queued.aborted)
		}
		if later := serve(t, b, "/"); !later.ended() || !later.aborted {
			t.Errorf("step 3: request after Close: ended %v aborted %v, want dropped at once", later.ended(), later.aborted)
		}
		if st := serve(t, b, StatsPath); st.rec.Code != 200 {
			t.Errorf("step 4: stats after Close: status %d, want 200", st.rec.Code)
		}
	})
}

func TestBackendServe(t *testing.T) {
	b := mustNew(t, Options{Routes: []Route{{Path: "/hold", Service: workerpool.Constant{D: time.Hour}}, {Path: "/", Service: workerpool.Constant{D: 0}}}})
	ln := testproc.Listen(t)
	ctx, stop := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- b.Serve(ctx, ln, nil) }()
	url := "http://" + ln.Addr().String()

	resp, err := http.Get(url + "/x")
	if err != nil {
		t.Fatalf("step 1: GET /x: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get(HeaderService) != "0s" {
		t.Errorf("step 1: GET /x: status %d service %q, want 200 and 0s", resp.StatusCode, resp.Header.Get(HeaderService))
	}
	held := make(chan error, 1)
	go func() {
		_, err := http.Get(url + "/hold")
		held <- err
	}()
	waitBusy(t, b, "step 2: /hold")
	stop()
	if err := <-served; err != nil {
		t.Errorf("step 3: Serve after ctx done: %v, want nil", err)
	}
	if err := <-held; err == nil {
		t.Errorf("step 4: the hour-long request got a response, want its connection dropped")
	}
}

// waitBusy waits, up to a few seconds of wall time, for a worker of b to
// take the request that what names.
func waitBusy(t *testing.T, b *Backend, what string) {
	t.Helper()
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for b.Stats().Busy == 0 {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("%s never took a worker", what)
		}
	}
}
