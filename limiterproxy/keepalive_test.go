package limiterproxy

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
)

// TestKeepAliveNeverRetries checks that with upstream keep-alive a request
// whose reused connection the upstream drops (a killed worker) answers 502
// once, and is not silently sent again as Go's transport does for GETs.
func TestKeepAliveNeverRetries(t *testing.T) {
	var seen atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) == 2 {
			panic(http.ErrAbortHandler) // drop the connection, no response
		}
		w.Write([]byte("ok")) //nolint:errcheck
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	for _, keep := range []bool{true, false} {
		seen.Store(0)
		front := httptest.NewServer(NewProxy(u, ProxyOptions{KeepAlive: keep}))
		var got []int
		for range 3 {
			resp, err := http.Get(front.URL + "/x")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got = append(got, resp.StatusCode)
		}
		front.Close()
		if want := []int{200, 502, 200}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Errorf("keepalive=%v: statuses %v, want %v", keep, got, want)
		}
		if n := seen.Load(); n != 3 {
			t.Errorf("keepalive=%v: upstream saw %d requests, want 3 (none sent twice)", keep, n)
		}
	}
}
