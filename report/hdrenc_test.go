package report

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// The reusing encoder must write the library's payload, and the library
// must read back the histogram encoded.
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
		sameEncoding(t, fmt.Sprintf("step %d (%d values)", i, len(vs)), h, e.encode(h))
		if i == 3 {
			h.RecordValues(5000, 1<<40) // counts wider than 4 bytes
			sameEncoding(t, fmt.Sprintf("step %d, wide counts", i), h, e.encode(h))
		}
	}
}

// sameEncoding checks that got, v2Encoder's encoding of h, holds the
// payload the library's encoding of h holds, and decodes to h.
func sameEncoding(t *testing.T, what string, h *hdr.PackedHistogram, got string) {
	t.Helper()
	gp, err := v2Payload(got)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	wp, err := v2Payload(encode(h))
	if err != nil {
		t.Fatalf("%s: the library's encoding: %v", what, err)
	}
	if !bytes.Equal(gp, wp) {
		t.Errorf("%s: payload\n%x\nwant the library's\n%x", what, gp, wp)
	}
	d, err := decode(got)
	if err != nil {
		t.Fatalf("%s: the library cannot decode it: %v", what, err)
	}
	if !slices.Equal(buckets(d), buckets(h)) || d.Max() != h.Max() || d.Min() != h.Min() {
		t.Errorf("%s: decodes to a histogram of %d values, max %d; want %d, max %d", what, d.TotalCount(), d.Max(), h.TotalCount(), h.Max())
	}
}

// v2Payload returns the inflated payload of a V2 compressed, base64
// encoding.
func v2Payload(s string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	if len(raw) < 8 || binary.BigEndian.Uint32(raw) != v2CompressedCookie || int(binary.BigEndian.Uint32(raw[4:])) != len(raw)-8 {
		return nil, fmt.Errorf("not a V2 compressed encoding of its stated length: %x", raw[:min(len(raw), 8)])
	}
	zr, err := zlib.NewReader(bytes.NewReader(raw[8:]))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// buckets returns h's non-empty buckets, value and count.
func buckets(h *hdr.PackedHistogram) [][2]int64 {
	var b [][2]int64
	h.ForEachBucket(func(v, c int64) bool {
		b = append(b, [2]int64{v, c})
		return true
	})
	return b
}
