package limit

import (
	"errors"
	"strings"
	"testing"

	"stampede/internal/parsetest"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want Rate
	}{
		{"10r/s", 10000},
		{"1r/s", 1000},
		{"30r/m", 500},
		{"1r/m", 16}, // 1000/60 rounded down, as nginx does
		{"7r/m", 116},
		{"60r/m", 1000},
		{"10", 10000}, // nginx reads a bare number as r/s
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "0r/s", "0r/m", "-1r/s", "r/s", "10r/h", "ten", "1.5r/s", " 1r/s", "99999999999999999999r/s"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) succeeded, want an error", bad)
		} else if !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseRate(%q) error %q does not quote the input", bad, err)
		}
	}
	if _, err := ParseRate("fast"); err == nil || !strings.Contains(err.Error(), "e.g. 10r/s") {
		t.Errorf("ParseRate(fast) error = %v, want an example", err)
	}
}

func TestRateString(t *testing.T) {
	for _, s := range []string{"10r/s", "30r/m", "1r/m", "7r/m", "59r/m"} {
		r, err := ParseRate(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.String(); got != s {
			t.Errorf("ParseRate(%q).String() = %q", s, got)
		}
	}
}

func FuzzParseRate(f *testing.F) {
	seeds := []string{"10r/s", "30r/m", "1r/m", "0r/s", "10", "r/s", "9223372036854775807r/s"}
	parsetest.Fuzz(f, "ParseRate", seeds, ParseRate, func(_ string, r Rate) error {
		if r <= 0 {
			return errors.New("want > 0")
		}
		return nil
	}, Rate.String)
}
