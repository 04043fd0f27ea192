package limiterproxy

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"stampede/limit"
)

// TestHandlerLocations: each request meets its location's limits, and a
// rejection names the location's limit.
func TestHandlerLocations(t *testing.T) {
	p := mustPolicy(t, limit.Config{
		Req:       []limit.ReqSpec{{Key: "$host", Rate: "1r/m", NoDelay: true, Burst: 100}},
		Locations: []limit.Location{{Paths: []string{"/report"}, Req: []limit.ReqSpec{{Key: "$host", Rate: "1r/m", NoDelay: true, Status: 429}}}},
	})
	h := &Handler{Policy: p, Metrics: NewMetrics(p), Next: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
	for i, tt := range []struct {
		path, limit string
		status      int
	}{
		{"/report", "", 200},
		{"/report?x=1", "locations[0].limit_req[0] $host", 429},
		{"/", "", 200},
		{"/page", "", 200},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "http://site1"+tt.path, nil))
		if w.Code != tt.status || w.Header().Get(LimitHeader) != tt.limit {
			t.Errorf("step %d: GET %s = %d %s %q, want %d %q", i+1, tt.path, w.Code, LimitHeader, w.Header().Get(LimitHeader), tt.status, tt.limit)
		}
	}
}

func FuzzLocationFlag(f *testing.F) {
	for _, s := range []string{"/api/method/stock_balance:$host=4", "/a,/b:$host=1", "$host=4", "/a", "/a b:x", "//..//x:$arg_a=1r/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		paths, rest, err := SplitLocationFlag(s)
		if err != nil {
			return
		}
		if paths == nil && rest != s {
			t.Fatalf("SplitLocationFlag(%q) = nil, %q: a server limit must come back whole", s, rest)
		}
		for _, p := range paths {
			if limit.CheckLocationPath(p) != nil {
				t.Fatalf("SplitLocationFlag(%q) gave the bad path %q", s, p)
			}
		}
	})
}
