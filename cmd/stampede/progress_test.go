package main

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"stampede/workload"
)

func TestProgressLine(t *testing.T) {
	s := progressState{
		wall: 2 * time.Second, model: 2 * time.Minute, total: 10 * time.Minute, done: 3000, rejectLabel: "429",
	}
	s.outcomes[workload.OK] = 2900
	s.outcomes[workload.Rejected] = 100
	full := progressLine(s, 0)
	// 8 model minutes left at 60 model seconds a wall second: 8 s of wall time.
	want := "model 2m0s/10m0s · wall 2s, 8s left · ok 2900 429 100 · 25 req/s model, 1.5k/s wall"
	if full != want {
		t.Errorf("full line:\n got %q\nwant %q", full, want)
	}
	if strings.Contains(full, "503") {
		t.Errorf("a limit answering 429 is counted under 503: %q", full)
	}
	for _, width := range []int{80, 60, 40, 20} {
		got := progressLine(s, width)
		if n := utf8.RuneCountInString(got); n > width {
			t.Errorf("width %d: %d columns: %q", width, n, got)
		}
		if !strings.HasPrefix(got, "model ") {
			t.Errorf("width %d: %q does not start with the model time", width, got)
		}
	}
	if got := progressLine(s, 60); got != "model 2m0s/10m0s · wall 2s, 8s left · ok 2900 429 100" {
		t.Errorf("width 60 drops the rates first: got %q", got)
	}
}
