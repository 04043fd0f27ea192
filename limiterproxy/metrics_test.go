package limiterproxy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"testing"

	"stampede/limit"
)

// TestDebugKeysText requires /debug/keys to print each key distinctly and
// as text: a $binary_remote_addr key as its address.
func TestDebugKeysText(t *testing.T) {
	addrs := []string{"127.0.0.2", "127.0.0.3", "10.1.2.3", "::1", "2001:db8::7"}
	tests := []struct {
		key  string
		want []string
	}{
		{"$binary_remote_addr", addrs},
		{"$host$binary_remote_addr", []string{
			`site\x7f\x00\x00\x02`, `site\x7f\x00\x00\x03`, `site\x0a\x01\x02\x03`,
			`site\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01`,
			`site \x01\x0d\xb8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x07`,
		}},
		{"$remote_addr", addrs},
	}
	for _, tt := range tests {
		p := mustPolicy(t, limit.Config{Conn: []limit.ConnSpec{{Key: tt.key, PerKey: 2}}})
		for _, a := range addrs {
			r := httptest.NewRequest("GET", "/", nil)
			r.Host = "site"
			r.RemoteAddr = netip.AddrPortFrom(netip.MustParseAddr(a), 5000).String()
			in := keyInput(r)
			key := string(p.Conn[0].Key.Append(nil, &in))
			if _, v := p.Conn[0].Limiter.Acquire(key); v != limit.Passed {
				t.Fatalf("%s: Acquire(%q) = %v", tt.key, key, v)
			}
		}
		rec := httptest.NewRecorder()
		NewMetrics(p).Handler().ServeHTTP(rec, httptest.NewRequest("GET", KeysPath, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: GET %s = %d", tt.key, KeysPath, rec.Code)
		}
		var got []limit.KeyCount
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatalf("%s: %s is not JSON: %v\n%s", tt.key, KeysPath, err, rec.Body)
		}
		var keys []string
		for _, k := range got {
			keys = append(keys, k.Key)
		}
		slices.Sort(keys)
		want := slices.Sorted(slices.Values(tt.want))
		if !slices.Equal(keys, want) {
			t.Errorf("%s: %s keys = %q, want %q", tt.key, KeysPath, keys, want)
		}
	}
}
