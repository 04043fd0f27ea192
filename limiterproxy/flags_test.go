package limiterproxy

import (
	"errors"
	"strings"
	"testing"

	"stampede/internal/parsetest"
	"stampede/limit"
)

func TestParseConnFlag(t *testing.T) {
	tests := []struct {
		in   string
		want limit.ConnSpec
	}{
		{"$host=4", limit.ConnSpec{Key: "$host", PerKey: 4}},
		{"host=4", limit.ConnSpec{Key: "$host", PerKey: 4}},
		{"binary_remote_addr=10,zone=1m", limit.ConnSpec{Key: "$binary_remote_addr", PerKey: 10, Zone: "1m"}},
		{"$host=4,zone=10m,status=429,dry_run", limit.ConnSpec{Key: "$host", PerKey: 4, Zone: "10m", Status: 429, DryRun: true}},
		{"$http_x_tenant=2, dry-run", limit.ConnSpec{Key: "$http_x_tenant", PerKey: 2, DryRun: true}},
		{"$host$binary_remote_addr=1", limit.ConnSpec{Key: "$host$binary_remote_addr", PerKey: 1}},
	}
	for i, tt := range tests {
		checkParsedFlag(t, i, "ParseConnFlag", ParseConnFlag, tt.in, tt.want)
	}
}

func TestParseConnFlagErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "want KEY=VALUE"},
		{"$host", "want KEY=VALUE"},
		{"=4", "want KEY=VALUE"},
		{"$host=0", `limit "0" is not a whole number of at least 1`},
		{"$host=four", `limit "four"`},
		{"$hots=4", "hots"},
		{"$host=4,status=200", `status "200" is not between 400 and 599`},
		{"$host=4,zone=big", `zone "big" is not a size`},
		{"$host=4,nodelay", `unknown option "nodelay"`},
		{"$host=4,", "empty option"},
		{"$host=4,dry_run=yes", `unknown option "dry_run=yes"`},
		{"$host=70000", `"$host=70000": per_key: 70000 is not a limit (want 1 to 65535`},
		{"$host=4,zone=16k", `"$host=4,zone=16k": zone: "16k" is too small`},
	}
	for i, tt := range tests {
		_, err := ParseConnFlag(tt.in)
		checkFlagError(t, i, "ParseConnFlag", tt.in, err, tt.want)
	}
}

func TestParseReqFlag(t *testing.T) {
	tests := []struct {
		in   string
		want limit.ReqSpec
	}{
		{"$binary_remote_addr=10r/s,burst=20,nodelay", limit.ReqSpec{Key: "$binary_remote_addr", Rate: "10r/s", Burst: 20, NoDelay: true}},
		{"host=1r/s,burst=5,nodelay", limit.ReqSpec{Key: "$host", Rate: "1r/s", Burst: 5, NoDelay: true}},
		{"$host=5r/s,burst=12,delay=8", limit.ReqSpec{Key: "$host", Rate: "5r/s", Burst: 12, Delay: 8}},
		{"$host=30r/m", limit.ReqSpec{Key: "$host", Rate: "30r/m"}},
		{"$http_x_tenant=2r/s,zone=1m,status=429,dry_run", limit.ReqSpec{Key: "$http_x_tenant", Rate: "2r/s", Zone: "1m", Status: 429, DryRun: true}},
	}
	for i, tt := range tests {
		checkParsedFlag(t, i, "ParseReqFlag", ParseReqFlag, tt.in, tt.want)
	}
}

func TestParseReqFlagErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"$host", "want KEY=VALUE"},
		{"$host=ten", `rate "ten" is not a rate`},
		{"$host=10r/h", `rate "10r/h" is not a rate`},
		{"$host=0r/s", `rate "0r/s"`},
		{"$host=1r/s,burst=-1", `burst "-1"`},
		{"$host=1r/s,burst=x", `burst "x"`},
		{"$host=1r/s,delay=2,nodelay", "nodelay and delay=N exclude each other"},
		{"$host=1r/s,status=600", `status "600"`},
		{"$host=1r/s,zone=", `zone "" is not a size`},
		{"$host=1r/s,fast", `unknown option "fast"`},
		{"$host=1r/s,burst=1000000001", `burst: 1000000001 is not a burst (want 0 to 1000000000`},
		{"$host=1r/s,delay=1000000001", `delay: 1000000001 is not a delay`},
	}
	for i, tt := range tests {
		_, err := ParseReqFlag(tt.in)
		checkFlagError(t, i, "ParseReqFlag", tt.in, err, tt.want)
	}
}

// checkParsedFlag checks that step i's flag in parses, with parse (named name),
// to want.
func checkParsedFlag[S comparable](t *testing.T, i int, name string, parse func(string) (S, error), in string, want S) {
	t.Helper()
	got, err := parse(in)
	if err != nil {
		t.Errorf("step %d: %s(%q): %v", i, name, in, err)
	} else if got != want {
		t.Errorf("step %d: %s(%q) = %+v, want %+v", i, name, in, got, want)
	}
}

// checkFlagError checks that step i's flag in was refused with an error
// that contains want and an example of a good flag.
func checkFlagError(t *testing.T, i int, name, in string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("step %d: %s(%q) succeeded, want an error containing %q", i, name, in, want)
	} else if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "e.g.") {
		t.Errorf("step %d: %s(%q) = %q, want it to contain %q and an example", i, name, in, err, want)
	}
}

// FuzzParseConnFlag checks that ParseConnFlag never panics and that what it
// accepts is in range and formats back to a flag that parses to the same
// spec.
func FuzzParseConnFlag(f *testing.F) {
	seeds := []string{"$host=4", "host=4,zone=10m,status=429,dry_run", "$http_x_tenant=1", "$host$remote_addr=3,zone=64k", "=", ",,", "$=1"}
	parsetest.Fuzz(f, "ParseConnFlag", seeds, ParseConnFlag, func(_ string, spec limit.ConnSpec) error {
		if spec.PerKey < 1 || (spec.Status != 0 && (spec.Status < 400 || spec.Status > 599)) {
			return errors.New("out of range")
		}
		return nil
	}, FormatConnFlag)
}

// FuzzParseReqFlag is FuzzParseConnFlag for ParseReqFlag.
func FuzzParseReqFlag(f *testing.F) {
	seeds := []string{"$binary_remote_addr=10r/s,burst=20,nodelay", "host=30r/m,delay=8,burst=12", "$host=1r/s,status=429,dry_run,zone=1m", "$host=r/s", "$host=99999999999999999999r/s"}
	parsetest.Fuzz(f, "ParseReqFlag", seeds, ParseReqFlag, func(_ string, spec limit.ReqSpec) error {
		if spec.Burst < 0 || spec.Delay < 0 || (spec.NoDelay && spec.Delay != 0) {
			return errors.New("out of range")
		}
		return nil
	}, FormatReqFlag)
}

func TestSplitLocationFlag(t *testing.T) {
	for _, tt := range []struct {
		in, limit, paths, err string
	}{
		{"$host=4", "$host=4", "", ""},
		{"/api/method/stock_balance:$host=4", "$host=4", "/api/method/stock_balance", ""},
		{"/a,/b:$host:$remote_addr=4", "$host:$remote_addr=4", "/a /b", ""},
		{"/a", "", "", "PATH:LIMIT"},
		{"/a,b:$host=4", "", "", `"b" does not start with "/"`},
		{"/a b:$host=4", "", "", `has ' '`},
	} {
		paths, limit, err := SplitLocationFlag(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("SplitLocationFlag(%q) error = %v, want one containing %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || limit != tt.limit || strings.Join(paths, " ") != tt.paths {
			t.Errorf("SplitLocationFlag(%q) = %q, %q, %v; want %q, %q", tt.in, paths, limit, err, tt.paths, tt.limit)
		}
	}
	var cfg limit.Config
	AddLocationLimits(&cfg, []string{"/a"}, []limit.ConnSpec{{Key: "$host", PerKey: 1}}, nil)
	AddLocationLimits(&cfg, []string{"/a"}, nil, []limit.ReqSpec{{Key: "$host", Rate: "1r/s"}})
	AddLocationLimits(&cfg, []string{"/a", "/b"}, []limit.ConnSpec{{Key: "$host", PerKey: 2}}, nil)
	if len(cfg.Locations) != 2 || len(cfg.Locations[0].Conn) != 1 || len(cfg.Locations[0].Req) != 1 || len(cfg.Locations[1].Conn) != 1 {
		t.Errorf("AddLocationLimits: got %+v, want /a with one limit of each kind and /a,/b with one limit_conn", cfg.Locations)
	}
}
