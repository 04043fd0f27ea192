package report

import (
	"maps"
	"strconv"
	"testing"

	"stampede/workload"
)

// TestTallyStatuses counts more distinct statuses than a tally holds in
// place, in two tallies merged, against a map of the same counts.
func TestTallyStatuses(t *testing.T) {
	codes := []int16{200, 503, 0, 502, 504, 429, 200, 404, 503, 201, 0, 200}
	var a, b, both tally
	want := map[string]uint64{}
	for i, c := range codes {
		for range i + 1 {
			half := &a
			if i%2 == 1 {
				half = &b
			}
			half.add(workload.OK, c)
			both.add(workload.OK, c)
			if c != 0 {
				want[strconv.Itoa(int(c))]++
			}
		}
	}
	merged := a
	merged.more = append([]statusCount(nil), a.more...)
	merged.merge(&b)
	for name, tl := range map[string]*tally{"one tally": &both, "merged": &merged} {
		got := tl.counts()
		if !maps.Equal(got.Status, want) {
			t.Errorf("%s: statuses %v, want %v", name, got.Status, want)
		}
		if n := uint64(len(codes) * (len(codes) + 1) / 2); got.Requests != n || got.OK != n {
			t.Errorf("%s: %d requests, %d ok, want %d of each", name, got.Requests, got.OK, n)
		}
	}
}
