package limit

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestValidateBounds holds every bound of a Config at its edge: the value
// on the bound passes, the one past it is refused naming its field.
func TestValidateBounds(t *testing.T) {
	conn := func(f func(*ConnSpec)) Config {
		s := ConnSpec{Key: "$host", PerKey: 1}
		f(&s)
		return Config{Conn: []ConnSpec{s}}
	}
	req := func(f func(*ReqSpec)) Config {
		s := ReqSpec{Key: "$host", Rate: "1r/s"}
		f(&s)
		return Config{Req: []ReqSpec{s}}
	}
	minZone := strconv.Itoa(MinZone)
	tests := []struct {
		name     string
		ok, bad  Config
		badField string
	}{
		{"per_key low", conn(func(s *ConnSpec) { s.PerKey = MinPerKey }), conn(func(s *ConnSpec) { s.PerKey = MinPerKey - 1 }), "limit_conn[0].per_key"},
		{"per_key high", conn(func(s *ConnSpec) { s.PerKey = MaxPerKey }), conn(func(s *ConnSpec) { s.PerKey = MaxPerKey + 1 }), "limit_conn[0].per_key"},
		{"status low", conn(func(s *ConnSpec) { s.Status = MinStatus }), conn(func(s *ConnSpec) { s.Status = MinStatus - 1 }), "limit_conn[0].status"},
		{"status high", req(func(s *ReqSpec) { s.Status = MaxStatus }), req(func(s *ReqSpec) { s.Status = MaxStatus + 1 }), "limit_req[0].status"},
		{"conn zone", conn(func(s *ConnSpec) { s.Zone = minZone }), conn(func(s *ConnSpec) { s.Zone = strconv.Itoa(MinZone - 1) }), "limit_conn[0].zone"},
		{"req zone", req(func(s *ReqSpec) { s.Zone = "32k" }), req(func(s *ReqSpec) { s.Zone = "31k" }), "limit_req[0].zone"},
		{"burst low", req(func(s *ReqSpec) { s.Burst = 0 }), req(func(s *ReqSpec) { s.Burst = -1 }), "limit_req[0].burst"},
		{"burst high", req(func(s *ReqSpec) { s.Burst = MaxBurst }), req(func(s *ReqSpec) { s.Burst = MaxBurst + 1 }), "limit_req[0].burst"},
		{"delay high", req(func(s *ReqSpec) { s.Delay = MaxBurst }), req(func(s *ReqSpec) { s.Delay = MaxBurst + 1 }), "limit_req[0].delay"},
		{"rate low", req(func(s *ReqSpec) { s.Rate = "1r/m" }), req(func(s *ReqSpec) { s.Rate = "0r/s" }), "limit_req[0].rate"},
		{"rate high", req(func(s *ReqSpec) { s.Rate = strconv.Itoa(MaxRate) + "r/s" }), req(func(s *ReqSpec) { s.Rate = strconv.Itoa(MaxRate+1) + "r/s" }), "limit_req[0].rate"},
		{"key", conn(func(s *ConnSpec) { s.Key = "host" }), conn(func(s *ConnSpec) { s.Key = "$hots" }), "limit_conn[0].key"},
		{"location path", Config{Locations: []Location{{Paths: []string{"/a"}}}}, Config{Locations: []Location{{Paths: []string{"a"}}}}, "locations[0].path[0]"},
		{"location duplicate", Config{Locations: []Location{{Paths: []string{"/a"}}, {Paths: []string{"/b"}}}}, Config{Locations: []Location{{Paths: []string{"/a"}}, {Paths: []string{"/a"}}}}, "locations[1].path[0]"},
		{"location limit", Config{Locations: []Location{{Paths: []string{"/a"}, Req: req(func(*ReqSpec) {}).Req}}}, Config{Locations: []Location{{Paths: []string{"/a"}, Req: req(func(s *ReqSpec) { s.Burst = -1 }).Req}}}, "locations[0].limit_req[0].burst"},
	}
	for _, tt := range tests {
		if err := tt.ok.Validate(); err != nil {
			t.Errorf("%s: Validate(%+v) = %v, want nil (on the bound)", tt.name, tt.ok, err)
		}
		if _, err := NewPolicy(tt.ok); err != nil {
			t.Errorf("%s: NewPolicy(%+v) = %v, want a policy", tt.name, tt.ok, err)
		}
		err := tt.bad.Validate()
		fes := FieldErrors(err)
		if len(fes) != 1 || fes[0].Field != tt.badField {
			t.Errorf("%s: Validate(%+v) = %v, want one error for %s", tt.name, tt.bad, err, tt.badField)
		}
		if _, perr := NewPolicy(tt.bad); perr == nil || err == nil || perr.Error() != err.Error() {
			t.Errorf("%s: NewPolicy error %v, want Validate's %v", tt.name, perr, err)
		}
	}
}

// TestValidateEveryMistake: every bad field of a Config is reported at
// once, in order, each a FieldError that unwraps to its cause.
func TestValidateEveryMistake(t *testing.T) {
	cfg := Config{
		Conn: []ConnSpec{{Key: "$host", PerKey: 0, Status: 302}},
		Req:  []ReqSpec{{Key: "$host", Rate: "1r/s"}, {Key: "$nope", Rate: "fast", Zone: "1k"}},
		Locations: []Location{
			{},
			{Paths: []string{"/a", "b"}, Conn: []ConnSpec{{Key: "$host", PerKey: MaxPerKey + 1}}},
		},
	}
	err := cfg.Validate()
	var got []string
	for _, fe := range FieldErrors(err) {
		got = append(got, fe.Field)
		if errors.Unwrap(fe) == nil {
			t.Errorf("%s: no cause", fe)
		}
	}
	want := []string{
		"limit_conn[0].per_key", "limit_conn[0].status",
		"limit_req[1].key", "limit_req[1].rate", "limit_req[1].zone",
		"locations[0].path",
		"locations[1].path[1]", "locations[1].limit_conn[0].per_key",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Validate reports\n%q\nwant\n%q", got, want)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != want[0] {
		t.Errorf("errors.As(Validate's error) = %v, want the first FieldError", fe)
	}
	if FieldErrors(nil) != nil {
		t.Errorf("FieldErrors(nil) is not nil")
	}
	if got := FieldErrors(fmt.Errorf("proxy: %w", cfg.Conn[0].Validate())); len(got) != 2 || got[0].Field != "per_key" {
		t.Errorf("FieldErrors through a wrapping = %v, want per_key and status", got)
	}
}

// FuzzConfigValidate: whatever Validate passes compiles, and its stages
// decide a request without trouble.
func FuzzConfigValidate(f *testing.F) {
	f.Add("$host", 4, "10m", 0, "10r/s", 5, 2, false, "/api")
	f.Add("host", 0, "16k", 302, "fast", -1, -1, true, "api")
	f.Fuzz(func(t *testing.T, key string, perKey int, zone string, status int, rate string, burst, delay int, nodelay bool, path string) {
		cfg := Config{
			Conn:      []ConnSpec{{Key: key, PerKey: perKey, Zone: zone, Status: status}},
			Req:       []ReqSpec{{Key: key, Rate: rate, Burst: burst, Delay: delay, NoDelay: nodelay, Zone: zone, Status: status}},
			Locations: []Location{{Paths: []string{path}, Conn: []ConnSpec{{Key: key, PerKey: perKey}}}},
		}
		err := cfg.Validate()
		p, perr := NewPolicy(cfg)
		if (err == nil) != (perr == nil) {
			t.Fatalf("Validate = %v but NewPolicy = %v", err, perr)
		}
		if err != nil {
			for _, fe := range FieldErrors(err) {
				if fe.Field == "" {
					t.Fatalf("an error without a field: %v", fe)
				}
			}
			return
		}
		lp := p.For(path)
		req, conn := lp.Keys(&Request{Host: "site1"})
		lp.ReqStage(time.Unix(0, 0), req)
		s, _ := lp.ConnStage(conn)
		s.Release()
	})
}
