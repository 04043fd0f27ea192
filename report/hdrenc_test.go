package report

import (
	"math/rand/v2"
	"testing"
)

// The reusing encoder must write exactly what the library writes.
func TestV2EncoderMatchesLibrary(t *testing.T) {
	var e v2Encoder
	rng := rand.New(rand.NewPCG(5, 6))
	cases := [][]int64{
		nil,
		{0},
		{1},
		{2047, 2048, 2049, 4095, 4096},
		{1000, 1000, 1000, 1002},
		{histHighest},
		{3_000_000, 3_000_000_000},
	}
	for i := 0; i < 20; i++ {
		var vs []int64
		for j := 0; j < rng.IntN(5000); j++ {
			vs = append(vs, int64(rng.ExpFloat64()*float64(int64(1)<<rng.IntN(30))))
		}
		cases = append(cases, vs)
	}
	for i, vs := range cases {
		h := newHist()
		for _, v := range vs {
			h.RecordValue(min(v, histHighest))
		}
		if got, want := e.encode(h), encode(h); got != want {
			t.Errorf("step %d (%d values): encoding\n%s\nwant\n%s", i, len(vs), got, want)
		}
		if i == 3 {
			h.RecordValues(5000, 1<<40) // counts wider than 4 bytes
			if got, want := e.encode(h), encode(h); got != want {
				t.Errorf("step %d, wide counts: encoding differs from the library's", i)
			}
		}
	}
}
